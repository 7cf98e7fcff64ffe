// softmax / log_softmax along one dim: subtract the row max, exp in opmath, sum in double.
#include <cmath>
#include <limits>

#include "core/strided_loop.h"
#include "kernels/cpu/reduction.h"

namespace inplace::cpu {

namespace {

template <typename T>
void softmax_row(const T* x, int64_t xs, T* y, int64_t ys, int64_t n, bool log) {
  using C = opmath_t<T>;
  C mx = -std::numeric_limits<C>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const C v = static_cast<C>(x[i * xs]);
    if (v > mx) mx = v;
  }
  double sum = 0;
  if (log) {
    for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<C>(x[i * xs]) - mx);
    const double lse = std::log(sum);
    for (int64_t i = 0; i < n; ++i)
      y[i * ys] = convert<T>(static_cast<double>(static_cast<C>(x[i * xs])) - mx - lse);
    return;
  }
  if constexpr (std::is_same_v<T, C>) {
    // Full-precision outputs hold the exps between the passes.
    for (int64_t i = 0; i < n; ++i) {
      const C e = std::exp(static_cast<C>(x[i * xs]) - mx);
      y[i * ys] = e;
      sum += e;
    }
    const double inv = 1.0 / sum;
    for (int64_t i = 0; i < n; ++i) y[i * ys] = static_cast<C>(y[i * ys] * inv);
  } else {
    for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<C>(x[i * xs]) - mx);
    const double inv = 1.0 / sum;
    for (int64_t i = 0; i < n; ++i)
      y[i * ys] = convert<T>(std::exp(static_cast<C>(x[i * xs]) - mx) * inv);
  }
}

}  // namespace

void softmax(const Tensor& in, int64_t dim, bool log, const Tensor& out) {
  IP_ASSERT(is_floating(out.dtype()) && in.shape() == out.shape(), "softmax keeps the shape");
  Tensor x = in.dtype() == out.dtype() ? in : in.to(out.dtype());
  Tensor y = out;
  if (x.dim() == 0) {
    x = x.unsqueeze(0);
    y = y.unsqueeze(0);
  }
  IP_ASSERT(dim >= 0 && dim < x.dim(), "softmax dim is wrapped");
  const int64_t n = x.shape()[dim], xs = x.strides()[dim], ys = y.strides()[dim];
  Shape rows = x.shape();
  rows[dim] = 1;
  visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (kIsFloat<T>) {
      const T* xp = x.data<T>();
      T* yp = y.data<T>();
      strided_loop<2>(
          rows, {x.strides(), y.strides()},
          [&](const std::array<int64_t, 2>& off, int64_t cnt, const std::array<int64_t, 2>& st) {
            for (int64_t j = 0; j < cnt; ++j)
              softmax_row(xp + off[0] + j * st[0], xs, yp + off[1] + j * st[1], ys, n, log);
          });
    }
  });
}

}  // namespace inplace::cpu
