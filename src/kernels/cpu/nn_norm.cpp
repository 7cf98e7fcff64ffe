// layer_norm and rms_norm, row by row over the trailing dims; statistics in double.
#include <cmath>

#include "kernels/cpu/nn.h"

namespace inplace::cpu {

namespace {

template <typename T>
inline double ld(T v) {
  return static_cast<double>(static_cast<opmath_t<T>>(v));
}

// sum of f(x[i]) in double over four chains (shorter dependency chains, same accuracy).
template <typename T, typename F>
double sum_of(const T* x, int64_t n, F f) {
  double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a0 += f(ld(x[i]));
    a1 += f(ld(x[i + 1]));
    a2 += f(ld(x[i + 2]));
    a3 += f(ld(x[i + 3]));
  }
  for (; i < n; ++i) a0 += f(ld(x[i]));
  return (a0 + a1) + (a2 + a3);
}

struct Rows {
  Tensor x;  // contiguous
  int64_t m, n;
};

Rows rows_of(const Tensor& x, int64_t axis) {
  Rows r{x.contiguous(), 1, 1};
  for (int64_t d = 0; d < x.dim(); ++d) (d < axis ? r.m : r.n) *= x.shape()[d];
  return r;
}

// Weights in x's dtype, contiguous (a copy only when they are not already).
Tensor param(const Tensor& p, DType dtype) {
  return p.defined() ? p.to(dtype).contiguous() : Tensor();
}

}  // namespace

void layer_norm(const Tensor& x, int64_t axis, const Tensor& weight, const Tensor& bias, double eps,
                const Tensor& out, const Tensor& mean, const Tensor& rstd) {
  IP_ASSERT(out.is_contiguous() && out.shape() == x.shape(), "layer_norm output is contiguous");
  const Rows rows = rows_of(x, axis);
  const Tensor w = param(weight, x.dtype()), b = param(bias, x.dtype());
  visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (kIsFloat<T>) {
      const T* wp = w.defined() ? w.data<T>() : nullptr;
      const T* bp = b.defined() ? b.data<T>() : nullptr;
      T* mp = mean.defined() ? mean.data<T>() : nullptr;
      T* rp = rstd.defined() ? rstd.data<T>() : nullptr;
      const int64_t n = rows.n;
      for (int64_t r = 0; r < rows.m; ++r) {
        const T* xr = rows.x.data<T>() + r * n;
        T* yr = out.data<T>() + r * n;
        const double mu = sum_of(xr, n, [](double v) { return v; }) / static_cast<double>(n);
        const double m2 = sum_of(xr, n, [mu](double v) { return (v - mu) * (v - mu); });
        const double rs = 1.0 / std::sqrt(m2 / static_cast<double>(n) + eps);
        if (wp && bp) {
          for (int64_t i = 0; i < n; ++i)
            yr[i] = convert<T>((ld(xr[i]) - mu) * rs * ld(wp[i]) + ld(bp[i]));
        } else if (wp) {
          for (int64_t i = 0; i < n; ++i) yr[i] = convert<T>((ld(xr[i]) - mu) * rs * ld(wp[i]));
        } else if (bp) {
          for (int64_t i = 0; i < n; ++i) yr[i] = convert<T>((ld(xr[i]) - mu) * rs + ld(bp[i]));
        } else {
          for (int64_t i = 0; i < n; ++i) yr[i] = convert<T>((ld(xr[i]) - mu) * rs);
        }
        if (mp) mp[r] = convert<T>(mu);
        if (rp) rp[r] = convert<T>(rs);
      }
    }
  });
}

void rms_norm(const Tensor& x, int64_t axis, const Tensor& weight, double eps, const Tensor& out,
              const Tensor& rstd) {
  IP_ASSERT(!rstd.defined() || is_floating(rstd.dtype()), "rms_norm rstd is floating");
  IP_ASSERT(out.is_contiguous() && out.shape() == x.shape(), "rms_norm output is contiguous");
  const Rows rows = rows_of(x, axis);
  const Tensor w = param(weight, x.dtype());
  visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (kIsFloat<T>) {
      const T* wp = w.defined() ? w.data<T>() : nullptr;
      const int64_t n = rows.n;
      for (int64_t r = 0; r < rows.m; ++r) {
        const T* xr = rows.x.data<T>() + r * n;
        T* yr = out.data<T>() + r * n;
        const double s = sum_of(xr, n, [](double v) { return v * v; });
        const double rs = 1.0 / std::sqrt(s / static_cast<double>(n) + eps);
        if (rstd.defined()) {
          if (rstd.dtype() == DType::kFloat64)
            rstd.data<double>()[r] = rs;
          else
            rstd.data<float>()[r] = static_cast<float>(rs);
        }
        if (wp) {
          for (int64_t i = 0; i < n; ++i) yr[i] = convert<T>(ld(xr[i]) * rs * ld(wp[i]));
        } else {
          for (int64_t i = 0; i < n; ++i) yr[i] = convert<T>(ld(xr[i]) * rs);
        }
      }
    }
  });
}

}  // namespace inplace::cpu
