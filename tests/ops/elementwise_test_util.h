// Helpers for the elementwise op tests: deterministic inputs of any dtype and float64
// reference loops that broadcast by index arithmetic (independent of the kernels' strides).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "test_util.h"

namespace inplace::testing {

inline const std::vector<DType> kAllDTypes = {
    DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt64,
    DType::kInt32,   DType::kInt16,   DType::kInt8,    DType::kUInt8,    DType::kBool};
inline const std::vector<DType> kFloatDTypes = {DType::kFloat32, DType::kFloat64, DType::kFloat16,
                                                DType::kBFloat16};

// Values in [-8, 8] (quarters for floats, exact in every float dtype); uint8 gets [0, 16],
// bool alternates irregularly.
inline Tensor sample(const Shape& shape, DType t, uint32_t seed = 0) {
  Tensor d = Tensor::empty(shape, DType::kFloat64);
  uint32_t state = 12345u + seed * 7919u;
  for (int64_t i = 0; i < d.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    const int v = static_cast<int>((state >> 16) % 17) - 8;
    double x = v;
    if (is_floating(t)) x = v / 4.0;
    if (t == DType::kUInt8) x = v + 8;
    if (t == DType::kBool) x = v > 0 ? 1 : 0;
    d.data<double>()[i] = x;
  }
  return d.to(t);
}

// Same, but never zero (divisors).
inline Tensor sample_nonzero(const Shape& shape, DType t, uint32_t seed = 0) {
  Tensor s = sample(shape, DType::kFloat64, seed);
  for (int64_t i = 0; i < s.numel(); ++i) {
    double& x = s.data<double>()[i];
    if (x == 0) x = 3;
    if (!is_floating(t)) x = x > 0 ? x + 1 : x - 1;
    if (is_floating(t)) x /= 4.0;
    if (t == DType::kUInt8) x = x < 0 ? -x : x;
  }
  return s.to(t);
}

inline Tensor make(const std::vector<double>& v, const Shape& shape, DType t) {
  return Tensor::from_vector<double>(v, shape).to(t);
}

// Flat (row-major) index into t for element `flat` of a broadcast result of shape `out`.
inline int64_t broadcast_index(const Tensor& t, const Shape& out, int64_t flat) {
  int64_t idx = 0, mul = 1;
  const int64_t lead = static_cast<int64_t>(out.size()) - t.dim();
  for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {
    const int64_t coord = flat % out[d];
    flat /= out[d];
    if (d < lead) continue;
    const int64_t size = t.shape()[d - lead];
    idx += (size == 1 ? 0 : coord) * mul;
    mul *= size;
  }
  return idx;
}

template <typename F>
std::vector<double> ref_unary(const Tensor& a, F f) {
  std::vector<double> out(static_cast<size_t>(a.numel()));
  for (int64_t i = 0; i < a.numel(); ++i) out[i] = f(a.at(i));
  return out;
}

template <typename F>
std::vector<double> ref_binary(const Tensor& a, const Tensor& b, const Shape& shape, F f) {
  std::vector<double> out(static_cast<size_t>(numel_of(shape)));
  for (int64_t i = 0; i < numel_of(shape); ++i)
    out[i] = f(a.at(broadcast_index(a, shape, i)), b.at(broadcast_index(b, shape, i)));
  return out;
}

// A double rounded to dtype t (for reference values of half / bfloat16 results).
inline double rounded(double v, DType t) {
  return Tensor::full({}, Scalar(v), t).at(0);
}

// Relative tolerance for results computed in (or rounded to) dtype t.
inline double tol_for(DType t) {
  switch (t) {
    case DType::kFloat16:
      return 2e-3;
    case DType::kBFloat16:
      return 1.6e-2;
    case DType::kFloat32:
      return 2e-6;
    case DType::kFloat64:
      return 1e-12;
    default:
      return 0;
  }
}

inline Value Dt(DType t) {
  return Value::dtype_value(t);
}
inline Value S(const std::string& s) {
  return Value::string(s);
}

// Runs `fn` and returns the error message it throws ("" if none).
inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace inplace::testing
