// Helpers of the GPU suite (tests/cuda): skipping with a visible reason where no CUDA device
// exists, random operands (contiguous, transposed, strided) and their copies on the device
// with the very same view, and closeness with a tolerance per dtype.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "backend/kernel_table.h"
#include "core/device_allocator.h"
#include "core/tensor.h"
#include "core/value.h"

namespace inplace::testing {

// Skips the test, saying why, where this machine cannot run CUDA.
#define IP_REQUIRE_CUDA()                                               \
  do {                                                                  \
    std::string why_;                                                   \
    if (!::inplace::device_available(::inplace::Device::cuda(), &why_)) \
      GTEST_SKIP() << "[gpu suite] skipped: " << why_;                  \
  } while (0)

// Rows of logits (sampling's kernels): pattern 0 random in [-8, 8), 1 five levels, 2 all equal,
// 3 -inf, +inf and -0/+0 among them, 4 NaN among them, 5 all -inf.
inline Tensor pattern_row(int64_t n, int pattern, DType dtype, uint32_t seed) {
  Tensor t = Tensor::empty({n}, DType::kFloat64);
  double* d = t.data<double>();
  const double inf = std::numeric_limits<double>::infinity();
  uint32_t x = seed * 2654435761u + 5;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    double v = static_cast<double>(x >> 8) / double(1 << 24) * 16.0 - 8.0;
    if (pattern == 1) v = std::floor(v / 3.2);
    if (pattern == 2) v = 0.75;
    if (pattern == 3) v = i % 7 == 0 ? -inf : i % 11 == 0 ? (i % 2 ? -0.0 : 0.0) : v;
    if (pattern == 3 && i % 1009 == 5) v = inf;
    if (pattern == 4 && (i % 997 == 3 || i == n - 1)) v = std::nan("");
    if (pattern == 5) v = -inf;
    d[i] = v;
  }
  return t.to(dtype);
}

// Deterministic values: floats on a 1/64 grid in [-2, 2] (exact in every float dtype), ints
// in [-5, 5] (non-negative when `non_negative`), bools.
inline Tensor random_tensor(const Shape& shape, DType dtype, uint32_t seed,
                            bool non_negative = false) {
  Tensor f = Tensor::empty(shape, DType::kFloat64);
  uint32_t x = seed * 2654435761u + 7;
  for (int64_t i = 0; i < f.numel(); ++i) {
    x = x * 1664525u + 1013904223u;
    const int64_t r = static_cast<int64_t>((x >> 8) % 257) - 128;
    double v = dtype == DType::kBool ? double(r & 1)
               : is_floating(dtype)  ? static_cast<double>(r) / 64.0
                                     : static_cast<double>(r % 6);
    if (non_negative) v = std::fabs(v);
    f.data<double>()[i] = v;
  }
  return f.to(dtype);
}

// The layout of a random operand: contiguous, the transpose of a contiguous base, or every
// second element of a base twice as long in the last dim.
enum class Layout { kContiguous, kTransposed, kStrided };

inline Tensor random_view(const Shape& shape, DType dtype, uint32_t seed, Layout layout,
                          bool non_negative = false) {
  if (layout == Layout::kContiguous || shape.size() < 2)
    return random_tensor(shape, dtype, seed, non_negative);
  if (layout == Layout::kTransposed) {
    Shape t = shape;
    std::swap(t[t.size() - 1], t[t.size() - 2]);
    return random_tensor(t, dtype, seed, non_negative)
        .transpose(static_cast<int64_t>(t.size()) - 1, static_cast<int64_t>(t.size()) - 2);
  }
  Shape wide = shape;
  wide.back() *= 2;
  return random_tensor(wide, dtype, seed, non_negative)
      .slice(static_cast<int64_t>(shape.size()) - 1, 0, std::nullopt, 2);
}

// The same view (offset, shape, strides) over a device copy of the whole storage.
inline Tensor to_cuda_view(const Tensor& t) {
  const Device cuda = Device::cuda();
  auto storage = Storage::allocate(t.storage()->nbytes(), cuda);
  device_allocator(cuda).copy_from_host(storage->data(), t.storage()->data(),
                                        t.storage()->nbytes());
  return Tensor(storage, t.offset(), t.shape(), t.strides(), t.dtype());
}

// `args` with every tensor (nested in lists too) a to_cuda_view of it.
inline std::vector<Value> to_cuda_args(std::vector<Value> args) {
  std::function<void(Value&)> upload = [&](Value& v) {
    if (v.is_tensor()) v = Value::from_tensor(to_cuda_view(v.tensor));
    for (Value& item : v.items) upload(item);
  };
  for (Value& v : args) upload(v);
  return args;
}

// Host values into a device tensor's own memory (its address stays the same).
inline void write_device(const Tensor& dst, const Tensor& host) {
  const Tensor h = host.to(dst.dtype()).contiguous();
  device_allocator(dst.device()).copy_from_host(dst.data_ptr(), h.data_ptr(), h.nbytes());
}

inline Tensor to_host(const Tensor& t) {
  return t.to_device(Device::cpu());
}

inline double dtype_tolerance(DType t) {
  switch (t) {
    case DType::kFloat16:
      return 1e-2;
    case DType::kBFloat16:
      return 4e-2;
    case DType::kFloat32:
      return 1e-4;
    case DType::kFloat64:
      return 1e-9;
    default:
      return 0;
  }
}

// |a - b| <= tol * (1 + |b|) everywhere (NaN equal to NaN), same shape and dtype.
inline ::testing::AssertionResult close(const Tensor& got, const Tensor& want, double tol) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype())
    return ::testing::AssertionFailure()
           << "got " << shape_str(got.shape()) << " " << dtype_name(got.dtype()) << ", want "
           << shape_str(want.shape()) << " " << dtype_name(want.dtype());
  const std::vector<double> g = got.contiguous().to_double_vector();
  const std::vector<double> w = want.contiguous().to_double_vector();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) && std::isnan(w[i])) continue;
    if (g[i] == w[i]) continue;
    if (!(std::fabs(g[i] - w[i]) <= tol * (1 + std::fabs(w[i]))))
      return ::testing::AssertionFailure()
             << "element " << i << " of " << shape_str(want.shape()) << ": got " << g[i]
             << ", want " << w[i] << " (tolerance " << tol << ")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace inplace::testing
