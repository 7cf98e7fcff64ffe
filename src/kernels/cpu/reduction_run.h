// The innermost loops of the cpu's sum and max/min over one run of elements (n elements s apart),
// shared by the reduction kernels and by fused_rows, whose row reductions must be bitwise theirs.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/dtype.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// The value better<kMax> keeps over n >= 1 unit-stride elements (the first of the best), as
// opmath values. For float, sixteen lanes take the best of their elements (SSE2's max/min keep
// the lane where the new value does not compare better, as better<> does); where the lanes saw
// no NaN and their best is not a zero, that value is the only one of its bits that compares
// best, so it is the first occurrence's. A NaN or a zero (whose sign is the first
// occurrence's), another type or a short run takes the element loop.
template <bool kMax, typename T>
opmath_t<T> extreme_run(const T* p, int64_t n) {
  using C = opmath_t<T>;
#if defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    if (n >= 32) {
      auto pick = [](__m128 v, __m128 best) {
        return kMax ? _mm_max_ps(v, best) : _mm_min_ps(v, best);
      };
      __m128 m[4], nan = _mm_setzero_ps();
      for (int j = 0; j < 4; ++j) {
        m[j] = _mm_loadu_ps(p + 4 * j);
        nan = _mm_or_ps(nan, _mm_cmpunord_ps(m[j], m[j]));
      }
      int64_t i = 16;
      for (; i + 16 <= n; i += 16) {
        for (int j = 0; j < 4; ++j) {
          const __m128 v = _mm_loadu_ps(p + i + 4 * j);
          nan = _mm_or_ps(nan, _mm_cmpunord_ps(v, v));
          m[j] = pick(v, m[j]);
        }
      }
      float lanes[16];
      for (int j = 0; j < 4; ++j) _mm_storeu_ps(lanes + 4 * j, m[j]);
      float best = lanes[0];
      for (int j = 1; j < 16; ++j)
        if (kMax ? lanes[j] > best : lanes[j] < best) best = lanes[j];
      bool any_nan = _mm_movemask_ps(nan) != 0;
      for (; i < n; ++i) {
        any_nan |= std::isnan(p[i]);
        if (kMax ? p[i] > best : p[i] < best) best = p[i];
      }
      if (!any_nan && best != 0.0f) return best;
    }
  }
#endif
  C best = static_cast<C>(p[0]);
  for (int64_t i = 1; i < n; ++i) {
    const C v = static_cast<C>(p[i]);
    if (better<kMax>(v, best)) best = v;
  }
  return best;
}

}  // namespace inplace::cpu
