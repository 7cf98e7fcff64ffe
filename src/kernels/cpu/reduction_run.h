// The innermost loops of the cpu's sum and max/min over one run of elements (n elements s apart),
// shared by the reduction kernels and by fused_rows, whose row reductions must be bitwise theirs.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/dtype.h"

namespace inplace::cpu {

// Floating sums accumulate in double; integers in uint64, so overflow wraps like torch's int64.
template <typename T>
using SumAcc = std::conditional_t<kIsFloat<T>, double, uint64_t>;

template <typename A, typename T>
inline A sum_load(T v) {
  if constexpr (kIsFloat<T>)
    return static_cast<A>(static_cast<opmath_t<T>>(v));
  else
    return static_cast<A>(v);
}

// Four independent chains for unit stride: shorter dependency chains, same accuracy in double.
// A float T's values summed as they are (a half type's opmath float values give the same sums).
template <typename T>
SumAcc<T> sum_run(const T* p, int64_t n, int64_t s) {
  using A = SumAcc<T>;
  A a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  int64_t i = 0;
  if (s == 1) {
    for (; i + 4 <= n; i += 4) {
      a0 += sum_load<A>(p[i]);
      a1 += sum_load<A>(p[i + 1]);
      a2 += sum_load<A>(p[i + 2]);
      a3 += sum_load<A>(p[i + 3]);
    }
  }
  for (; i < n; ++i) a0 += sum_load<A>(p[i * s]);
  return (a0 + a1) + (a2 + a3);
}

// The sum the unfused kernel computes over n elements at stride s, here packed contiguously in
// p: sum_run's four chains where s is 1 (`unit`), else its one chain.
template <typename T>
SumAcc<T> sum_packed(const T* p, int64_t n, bool unit) {
  if (unit) return sum_run(p, n, 1);
  using A = SumAcc<T>;
  A a0 = 0;
  for (int64_t i = 0; i < n; ++i) a0 += sum_load<A>(p[i]);
  return (a0 + A(0)) + (A(0) + A(0));
}

// Whether v replaces best in a max (kMax) or min: NaN wins (its first occurrence), ties keep
// the first occurrence, as torch does.
template <bool kMax, typename C>
inline bool better(C v, C best) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(v)) return !std::isnan(best);
  }
  return kMax ? v > best : v < best;
}

}  // namespace inplace::cpu
