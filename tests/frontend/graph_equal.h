// Deep comparison of graphs and values for the frontend tests: every node field, every value
// (floats bit-exact with NaN == NaN and the sign of zero kept), constants, signature.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "ir/graph.h"

namespace inplace::testing {

inline bool same_double(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

inline ::testing::AssertionResult tensors_identical(const Tensor& a, const Tensor& b,
                                                    const std::string& where) {
  if (a.defined() != b.defined())
    return ::testing::AssertionFailure() << where << ": defined differs";
  if (a.dtype() != b.dtype())
    return ::testing::AssertionFailure()
           << where << ": dtype " << dtype_name(a.dtype()) << " != " << dtype_name(b.dtype());
  if (a.shape() != b.shape())
    return ::testing::AssertionFailure()
           << where << ": shape " << shape_str(a.shape()) << " != " << shape_str(b.shape());
  // Integers compare bytewise: int64 beyond 2^53 would not survive a trip through double.
  const bool integral = is_integral(a.dtype(), true);
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  const size_t w = a.itemsize();
  for (int64_t i = 0; i < a.numel(); ++i) {
    bool same = integral ? std::memcmp(static_cast<const char*>(ca.data_ptr()) + i * w,
                                       static_cast<const char*>(cb.data_ptr()) + i * w, w) == 0
                         : same_double(a.at(i), b.at(i));
    if (!same)
      return ::testing::AssertionFailure()
             << where << ": element " << i << " " << a.at(i) << " != " << b.at(i);
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult values_identical(const Value& a, const Value& b,
                                                   const std::string& where) {
  using K = Value::Kind;
  if (a.kind != b.kind)
    return ::testing::AssertionFailure()
           << where << ": kind " << a.kind_name() << " != " << b.kind_name();
  switch (a.kind) {
    case K::kBool:
      if (a.b != b.b) return ::testing::AssertionFailure() << where << ": bool differs";
      break;
    case K::kInt:
      if (a.i != b.i) return ::testing::AssertionFailure() << where << ": " << a.i << " != " << b.i;
      break;
    case K::kFloat:
      if (!same_double(a.f, b.f))
        return ::testing::AssertionFailure() << where << ": " << a.f << " != " << b.f;
      break;
    case K::kString:
    case K::kDevice:
      if (a.s != b.s) return ::testing::AssertionFailure() << where << ": " << a.s << " != " << b.s;
      break;
    case K::kNode:
      if ((a.node ? a.node->name : "") != (b.node ? b.node->name : ""))
        return ::testing::AssertionFailure() << where << ": node reference differs";
      break;
    case K::kDType:
      if (a.dtype != b.dtype) return ::testing::AssertionFailure() << where << ": dtype differs";
      break;
    case K::kTensor:
      return tensors_identical(a.tensor, b.tensor, where);
    default:
      break;
  }
  if (a.keys != b.keys) return ::testing::AssertionFailure() << where << ": dict keys differ";
  if (a.items.size() != b.items.size())
    return ::testing::AssertionFailure()
           << where << ": " << a.items.size() << " items != " << b.items.size();
  for (size_t i = 0; i < a.items.size(); ++i) {
    auto r = values_identical(a.items[i], b.items[i], where + "[" + std::to_string(i) + "]");
    if (!r) return r;
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult graphs_identical(const Graph& a, const Graph& b) {
  if (a.name != b.name)
    return ::testing::AssertionFailure() << "name " << a.name << " != " << b.name;
  if (a.to_string() != b.to_string())
    return ::testing::AssertionFailure() << "listing differs:\n"
                                         << a.to_string() << "vs\n"
                                         << b.to_string();
  auto na = a.nodes(), nb = b.nodes();
  if (na.size() != nb.size()) return ::testing::AssertionFailure() << "node count differs";
  for (size_t i = 0; i < na.size(); ++i) {
    const Node &x = *na[i], &y = *nb[i];
    std::string w = "node " + x.name;
    if (x.name != y.name || x.op != y.op || x.target != y.target)
      return ::testing::AssertionFailure() << w << ": name/op/target differ";
    if (x.args.size() != y.args.size() || x.kwargs.size() != y.kwargs.size())
      return ::testing::AssertionFailure() << w << ": argument counts differ";
    for (size_t k = 0; k < x.args.size(); ++k) {
      auto r = values_identical(x.args[k], y.args[k], w + " args[" + std::to_string(k) + "]");
      if (!r) return r;
    }
    for (size_t k = 0; k < x.kwargs.size(); ++k) {
      if (x.kwargs[k].first != y.kwargs[k].first)
        return ::testing::AssertionFailure() << w << ": kwarg order/name differs";
      auto r = values_identical(x.kwargs[k].second, y.kwargs[k].second,
                                w + " kwargs[" + x.kwargs[k].first + "]");
      if (!r) return r;
    }
    if (x.meta.shape != y.meta.shape || x.meta.dtype != y.meta.dtype ||
        x.meta.attrs != y.meta.attrs)
      return ::testing::AssertionFailure() << w << ": meta differs";
  }
  if (a.constants.size() != b.constants.size())
    return ::testing::AssertionFailure() << "constant count differs";
  for (const auto& [k, t] : a.constants) {
    auto it = b.constants.find(k);
    if (it == b.constants.end())
      return ::testing::AssertionFailure() << "constant " << k << " missing";
    auto r = tensors_identical(t, it->second, "constant " + k);
    if (!r) return r;
  }
  const auto &sa = a.signature, &sb = b.signature;
  if (sa.inputs.size() != sb.inputs.size() || sa.outputs.size() != sb.outputs.size())
    return ::testing::AssertionFailure() << "signature sizes differ";
  for (size_t i = 0; i < sa.inputs.size(); ++i)
    if (sa.inputs[i].kind != sb.inputs[i].kind || sa.inputs[i].node != sb.inputs[i].node ||
        sa.inputs[i].target != sb.inputs[i].target)
      return ::testing::AssertionFailure() << "signature input " << i << " differs";
  for (size_t i = 0; i < sa.outputs.size(); ++i)
    if (sa.outputs[i].kind != sb.outputs[i].kind || sa.outputs[i].target != sb.outputs[i].target)
      return ::testing::AssertionFailure() << "signature output " << i << " differs";
  return ::testing::AssertionSuccess();
}

}  // namespace inplace::testing
