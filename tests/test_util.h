// Shared test helpers: call an op through the registry exactly as the interpreter does,
// and compare tensors against independently computed values.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backend/eager_call.h"
#include "backend/kernel_table.h"
#include "core/tensor.h"
#include "core/value.h"
#include "ops/registry.h"

namespace inplace::testing {

// The message of the inplace::Error that f() throws ("<no error>" when it throws none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// msg contains every one of parts.
inline ::testing::AssertionResult mentions(const std::string& msg, std::vector<std::string> parts) {
  for (const auto& p : parts)
    if (msg.find(p) == std::string::npos)
      return ::testing::AssertionFailure() << "'" << msg << "' lacks '" << p << "'";
  return ::testing::AssertionSuccess();
}

// v is a view of base with exactly this shape, strides and offset.
inline ::testing::AssertionResult is_view(const Tensor& v, const Tensor& base, const Shape& shape,
                                          const Shape& strides, int64_t offset) {
  if (!v.same_storage(base)) return ::testing::AssertionFailure() << "does not share storage";
  if (v.shape() != shape)
    return ::testing::AssertionFailure()
           << "shape " << shape_str(v.shape()) << " != " << shape_str(shape);
  if (v.strides() != strides)
    return ::testing::AssertionFailure()
           << "strides " << shape_str(v.strides()) << " != " << shape_str(strides);
  if (v.offset() != offset)
    return ::testing::AssertionFailure() << "offset " << v.offset() << " != " << offset;
  return ::testing::AssertionSuccess();
}

// Values drawn uniformly from [-1, 1) as float32, then cast to dtype.
inline Tensor uniform_tensor(const Shape& shape, DType dtype, std::mt19937& rng) {
  Tensor t = Tensor::empty(shape, DType::kFloat32);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t.to(dtype);
}

inline Value T(const Tensor& t) {
  return Value::from_tensor(t);
}
inline Value I(int64_t v) {
  return Value::integer(v);
}
inline Value F(double v) {
  return Value::floating(v);
}
inline Value B(bool v) {
  return Value::boolean(v);
}
inline Value L(std::vector<Value> v) {
  return Value::list(std::move(v));
}
inline Value Tup(std::vector<Value> v) {
  return Value::tuple(std::move(v));
}
inline Value None() {
  return Value::none();
}
inline Value Sl(Value a, Value b, Value c) {
  return Value::slice(a, b, c);
}

// `op`'s cpu kernel from the kernel table into planned results (the engine's path).
inline void cpu_out(const OpDef& op, const Args& args, const std::vector<Tensor>& outs) {
  const Kernel* kernel = KernelTable::get().find(op, DeviceType::kCpu);
  ASSERT_NE(kernel, nullptr) << op.schema.full_name() << " has a cpu kernel";
  (*kernel)(args, outs, KernelContext{});
}

// Resolves `target` (any FX spelling) and runs it eagerly (backend/eager_call.h).
inline Value call(const std::string& target, std::vector<Value> args,
                  std::vector<std::pair<std::string, Value>> kwargs = {}) {
  ResolvedCall rc = resolve_call(target, args, kwargs, "test");
  return eager_call(*rc.op, rc.args);
}
inline Tensor call_t(const std::string& target, std::vector<Value> args,
                     std::vector<std::pair<std::string, Value>> kwargs = {}) {
  return call(target, std::move(args), std::move(kwargs)).as_tensor("test result");
}

inline Tensor ft(std::vector<float> v, Shape s) {
  return Tensor::from_vector<float>(v, s);
}
inline Tensor dt(std::vector<double> v, Shape s) {
  return Tensor::from_vector<double>(v, s);
}
inline Tensor lt(std::vector<int64_t> v, Shape s) {
  return Tensor::from_vector<int64_t>(v, s);
}
inline Tensor bt(std::vector<bool> v, Shape s) {
  Tensor t = Tensor::empty(s, DType::kBool);
  for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i];
  return t;
}
// 0, 1, 2, ... as float32 in `shape`.
inline Tensor iota(Shape s, DType dtype = DType::kFloat32) {
  Tensor t = Tensor::empty(s, DType::kFloat64);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = static_cast<double>(i);
  return t.to(dtype);
}

inline ::testing::AssertionResult tensor_near(const Tensor& got, const Shape& shape,
                                              const std::vector<double>& want, double tol = 1e-6) {
  if (got.shape() != shape)
    return ::testing::AssertionFailure()
           << "shape " << shape_str(got.shape()) << " != " << shape_str(shape);
  if (static_cast<size_t>(got.numel()) != want.size())
    return ::testing::AssertionFailure() << "numel " << got.numel() << " != " << want.size();
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.at(i), w = want[i];
    bool ok = (std::isnan(g) && std::isnan(w)) || g == w ||
              std::fabs(g - w) <= tol * std::max(1.0, std::fabs(w));
    if (!ok)
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << g << ", want " << w << " in " << got.to_string();
  }
  return ::testing::AssertionSuccess();
}

// Same shape, dtype and values (bit-exact unless tol > 0).
inline ::testing::AssertionResult tensor_equal(const Tensor& a, const Tensor& b, double tol = 0) {
  if (a.dtype() != b.dtype())
    return ::testing::AssertionFailure()
           << "dtype " << dtype_name(a.dtype()) << " != " << dtype_name(b.dtype());
  return tensor_near(a, b.shape(), b.to_double_vector(), tol);
}

}  // namespace inplace::testing
