// layer_norm and rms_norm, row by row over the trailing dims; statistics in double.
#include <cmath>

#include "kernels/cpu/nn.h"

namespace inplace::cpu {

namespace {

template <typename T>
inline double ld(T v) {
  return static_cast<double>(static_cast<opmath_t<T>>(v));
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
        double s = 0;
        for (int64_t i = 0; i < n; ++i) s += ld(xr[i]);
        const double mu = s / static_cast<double>(n);
        double m2 = 0;
        for (int64_t i = 0; i < n; ++i) {
          const double d = ld(xr[i]) - mu;
          m2 += d * d;
        }
        const double rs = 1.0 / std::sqrt(m2 / static_cast<double>(n) + eps);
        for (int64_t i = 0; i < n; ++i) {
          double y = (ld(xr[i]) - mu) * rs;
          if (wp) y *= ld(wp[i]);
          if (bp) y += ld(bp[i]);
          yr[i] = convert<T>(y);
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
        double s = 0;
        for (int64_t i = 0; i < n; ++i) s += ld(xr[i]) * ld(xr[i]);
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
