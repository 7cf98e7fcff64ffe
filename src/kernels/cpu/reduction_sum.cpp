// sum, mean and var. Floating inputs accumulate in double (float32 sums then stay well within
// 1e-6 of a float64 reference); integers accumulate in uint64 so overflow wraps like torch's int64
// (reduction_run.h).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/cpu/reduction_loop.h"
#include "kernels/cpu/reduction_run.h"

namespace inplace::cpu {

namespace {

template <typename T>
using AccT = SumAcc<T>;

template <typename A, typename T>
inline A load(T v) {
  return sum_load<A>(v);
}

template <typename O, typename A>
inline O store(A acc) {
  if constexpr (std::is_same_v<A, double>)
    return convert<O>(acc);
  else
    return convert<O>(static_cast<int64_t>(acc));
}

template <typename T>
AccT<T> sum_reduced(const ReduceLoop& p, const T* in, int64_t base) {
  AccT<T> acc = 0;
  for_each_run(p, base,
               [&](int64_t off, int64_t n, int64_t s, int64_t) { acc += sum_run(in + off, n, s); });
  return acc;
}

// Runs the sums of every output and hands each to done(out_offset, acc): per output, or for an
// outer reduction a block of adjacent outputs at a time so input rows are read contiguously.
template <typename T, typename Done>
void reduce_sums(const ReduceLoop& p, const T* in, Done&& done) {
  using A = AccT<T>;
  if (is_outer_reduction(p)) {
    for_each_output_block(p, [&](int64_t ib, int64_t ob, int64_t w, int64_t os) {
      A acc[kOutputBlock] = {};
      for_each_run(p, ib, [&](int64_t off, int64_t n, int64_t s, int64_t) {
        for (int64_t r = 0; r < n; ++r) {
          const T* row = in + off + r * s;
          for (int64_t j = 0; j < w; ++j) acc[j] += load<A>(row[j]);
        }
      });
      for (int64_t j = 0; j < w; ++j) done(ob + j * os, acc[j]);
    });
    return;
  }
  for_each_output(p, [&](int64_t io, int64_t oo) { done(oo, sum_reduced(p, in, io)); });
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
    reduce_sums(p, ip, [&](int64_t oo, AccT<T> acc) { op[oo] = store<O>(acc); });
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
      // 0/0 = NaN for an empty reduction.
      reduce_sums(p, ip, [&](int64_t oo, double acc) { op[oo] = convert<T>(acc / n); });
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
      auto finish = [&](double m2) {
        const double v = m2 / divisor;
        return convert<T>(take_sqrt ? std::sqrt(v) : v);
      };
      // Two passes: deviations from the mean avoid sum-of-squares cancellation.
      if (is_outer_reduction(p)) {
        for_each_output_block(p, [&](int64_t ib, int64_t ob, int64_t w, int64_t os) {
          double mu[kOutputBlock] = {}, m2[kOutputBlock] = {};
          for_each_run(p, ib, [&](int64_t off, int64_t len, int64_t s, int64_t) {
            for (int64_t r = 0; r < len; ++r)
              for (int64_t j = 0; j < w; ++j) mu[j] += load<double>(ip[off + r * s + j]);
          });
          for (int64_t j = 0; j < w; ++j) mu[j] /= n;
          for_each_run(p, ib, [&](int64_t off, int64_t len, int64_t s, int64_t) {
            for (int64_t r = 0; r < len; ++r)
              for (int64_t j = 0; j < w; ++j) {
                const double d = load<double>(ip[off + r * s + j]) - mu[j];
                m2[j] += d * d;
              }
          });
          for (int64_t j = 0; j < w; ++j) op[ob + j * os] = finish(m2[j]);
        });
        return;
      }
      for_each_output(p, [&](int64_t io, int64_t oo) {
        const double mu = sum_reduced(p, ip, io) / n;
        double m2 = 0;
        for_each_run(p, io, [&](int64_t off, int64_t len, int64_t s, int64_t) {
          const T* q = ip + off;
          for (int64_t i = 0; i < len; ++i) {
            const double d = load<double>(q[i * s]) - mu;
            m2 += d * d;
          }
        });
        op[oo] = finish(m2);
      });
    }
  });
}

}  // namespace inplace::cpu
