// sum, mean and var. Floating inputs accumulate in double (float32 sums then stay well within
// 1e-6 of a float64 reference); integers accumulate in uint64 so overflow wraps like torch's int64.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/cpu/reduction_loop.h"

namespace inplace::cpu {

namespace {

template <typename T>
using AccT = std::conditional_t<kIsFloat<T>, double, uint64_t>;

template <typename A, typename T>
inline A load(T v) {
  if constexpr (kIsFloat<T>)
    return static_cast<A>(static_cast<opmath_t<T>>(v));
  else
    return static_cast<A>(v);
}

template <typename O, typename A>
inline O store(A acc) {
  if constexpr (std::is_same_v<A, double>)
    return convert<O>(acc);
  else
    return convert<O>(static_cast<int64_t>(acc));
}

// Four independent chains for unit stride: shorter dependency chains, same accuracy in double.
template <typename T>
AccT<T> sum_run(const T* p, int64_t n, int64_t s) {
  using A = AccT<T>;
  A a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  int64_t i = 0;
  if (s == 1) {
    for (; i + 4 <= n; i += 4) {
      a0 += load<A>(p[i]);
      a1 += load<A>(p[i + 1]);
      a2 += load<A>(p[i + 2]);
      a3 += load<A>(p[i + 3]);
    }
  }
  for (; i < n; ++i) a0 += load<A>(p[i * s]);
  return (a0 + a1) + (a2 + a3);
}

template <typename T>
AccT<T> sum_reduced(const ReduceLoop& p, const T* in, int64_t base) {
  AccT<T> acc = 0;
  for_each_run(p, base,
               [&](int64_t off, int64_t n, int64_t s, int64_t) { acc += sum_run(in + off, n, s); });
  return acc;
}

// Calls f<T, O>() for in's type T and out's type O, which is T or (integral T) int64.
template <typename F>
void visit_sum_types(const Tensor& in, const Tensor& out, F&& f) {
  visit_dtype(in.dtype(), [&]<typename T>() {
    if (out.dtype() == in.dtype()) {
      f.template operator()<T, T>();
    } else {
      IP_ASSERT(!kIsFloat<T> && out.dtype() == DType::kInt64,
                "sum output is the input dtype or int64 for integral inputs");
      f.template operator()<T, int64_t>();
    }
  });
}

}  // namespace

void sum(const Tensor& in, const DimMask& reduced, const Tensor& out) {
  const ReduceLoop p = make_reduce_loop(in, reduced, out);
  visit_sum_types(in, out, [&]<typename T, typename O>() {
    const T* ip = in.data<T>();
    O* op = out.data<O>();
    for_each_output(p, [&](int64_t io, int64_t oo) { op[oo] = store<O>(sum_reduced(p, ip, io)); });
  });
}

void mean(const Tensor& in, const DimMask& reduced, const Tensor& out) {
  IP_ASSERT(is_floating(in.dtype()) && out.dtype() == in.dtype(), "mean runs on floating dtypes");
  const ReduceLoop p = make_reduce_loop(in, reduced, out);
  const double n = static_cast<double>(p.red_numel);
  visit_dtype(in.dtype(), [&]<typename T>() {
    if constexpr (kIsFloat<T>) {
      const T* ip = in.data<T>();
      T* op = out.data<T>();
      for_each_output(p, [&](int64_t io, int64_t oo) {
        op[oo] = convert<T>(sum_reduced(p, ip, io) / n);  // 0/0 = NaN for an empty reduction
      });
    }
  });
}

void var(const Tensor& in, const DimMask& reduced, double correction, const Tensor& out,
         bool take_sqrt) {
  IP_ASSERT(is_floating(in.dtype()) && out.dtype() == in.dtype(), "var runs on floating dtypes");
  const ReduceLoop p = make_reduce_loop(in, reduced, out);
  const double n = static_cast<double>(p.red_numel);
  const double divisor = std::max(0.0, n - correction);
  visit_dtype(in.dtype(), [&]<typename T>() {
    if constexpr (kIsFloat<T>) {
      const T* ip = in.data<T>();
      T* op = out.data<T>();
      for_each_output(p, [&](int64_t io, int64_t oo) {
        // Two passes: the deviations from an exact-ish mean avoid sum-of-squares cancellation.
        const double mu = sum_reduced(p, ip, io) / n;
        double m2 = 0;
        for_each_run(p, io, [&](int64_t off, int64_t len, int64_t s, int64_t) {
          const T* q = ip + off;
          for (int64_t i = 0; i < len; ++i) {
            const double d = load<double>(q[i * s]) - mu;
            m2 += d * d;
          }
        });
        const double v = m2 / divisor;
        op[oo] = convert<T>(take_sqrt ? std::sqrt(v) : v);
      });
    }
  });
}

}  // namespace inplace::cpu
