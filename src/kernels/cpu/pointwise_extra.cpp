#include "kernels/cpu/pointwise_extra.h"

#include <array>

#include "core/half.h"
#include "core/strided_loop.h"

namespace inplace::cpu {

namespace {

// `t` broadcast to `shape` and in `dtype` (a converted copy only when the dtype differs).
Tensor operand_as(const Tensor& t, const Shape& shape, DType dtype) {
  Tensor x = t.dtype() == dtype ? t : t.to(dtype);
  return x.expand(shape);
}

// Calls f(o, a, b, c) per element with the compute type of out's dtype; up to three inputs
// (unused ones are `out` itself, never read).
template <size_t N, typename F>
void map(const Tensor& out, const std::array<Tensor, N>& ins, const char* op, F&& f) {
  std::array<Tensor, N> xs;
  for (size_t k = 0; k < N; ++k) xs[k] = operand_as(ins[k], out.shape(), out.dtype());
  auto run = [&](auto zero) {
    using T = decltype(zero);
    std::array<Shape, N + 1> strides;
    strides[0] = out.strides();
    for (size_t k = 0; k < N; ++k) strides[k + 1] = xs[k].strides();
    T* o = out.data<T>();
    std::array<const T*, N> p;
    for (size_t k = 0; k < N; ++k) p[k] = xs[k].template data<T>();
    strided_loop<N + 1>(out.shape(), strides,
                        [&](const std::array<int64_t, N + 1>& off, int64_t n,
                            const std::array<int64_t, N + 1>& st) {
                          for (int64_t i = 0; i < n; ++i) {
                            std::array<T, N> v;
                            for (size_t k = 0; k < N; ++k) v[k] = p[k][off[k + 1] + i * st[k + 1]];
                            o[off[0] + i * st[0]] = f(v);
                          }
                        });
  };
  switch (out.dtype()) {
    case DType::kFloat32:
      run(float{});
      break;
    case DType::kFloat64:
      run(double{});
      break;
    default:
      IP_FAIL(kDTypeMismatch, "[", op, "] not implemented for ", dtype_name(out.dtype()),
              " (float32 and float64 are)");
  }
}

}  // namespace

void addcmul(const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
             Scalar value) {
  const double v = value.to_double();
  map<3>(out, {self, t1, t2}, "addcmul", [v](const auto& x) {
    using T = std::decay_t<decltype(x[0])>;
    return static_cast<T>(x[0] + static_cast<T>(v) * x[1] * x[2]);
  });
}

void addcdiv(const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
             Scalar value) {
  const double v = value.to_double();
  map<3>(out, {self, t1, t2}, "addcdiv", [v](const auto& x) {
    using T = std::decay_t<decltype(x[0])>;
    return static_cast<T>(x[0] + static_cast<T>(v) * (x[1] / x[2]));
  });
}

namespace {
template <typename T>
T lerp_one(T self, T end, T w) {
  // torch's form: exact at both ends, monotone in w.
  return std::abs(w) < T(0.5) ? self + w * (end - self) : end - (end - self) * (T(1) - w);
}
}  // namespace

void lerp(const Tensor& out, const Tensor& self, const Tensor& end, const Tensor& weight,
          Scalar weight_scalar) {
  if (weight.defined()) {
    map<3>(out, {self, end, weight}, "lerp",
           [](const auto& x) { return lerp_one(x[0], x[1], x[2]); });
    return;
  }
  const double w = weight_scalar.to_double();
  map<2>(out, {self, end}, "lerp", [w](const auto& x) {
    using T = std::decay_t<decltype(x[0])>;
    return lerp_one(x[0], x[1], static_cast<T>(w));
  });
}

void hardtanh(const Tensor& out, const Tensor& self, Scalar lo, Scalar hi) {
  const double a = lo.to_double(), b = hi.to_double();
  map<1>(out, {self}, "hardtanh", [a, b](const auto& x) {
    using T = std::decay_t<decltype(x[0])>;
    T v = x[0];
    // NaN passes through, as torch's clamp-based kernel does.
    return v < static_cast<T>(a) ? static_cast<T>(a)
                                 : (v > static_cast<T>(b) ? static_cast<T>(b) : v);
  });
}

void leaky_relu(const Tensor& out, const Tensor& self, Scalar slope) {
  const double s = slope.to_double();
  map<1>(out, {self}, "leaky_relu", [s](const auto& x) {
    using T = std::decay_t<decltype(x[0])>;
    return x[0] > T(0) ? x[0] : x[0] * static_cast<T>(s);
  });
}

}  // namespace inplace::cpu
