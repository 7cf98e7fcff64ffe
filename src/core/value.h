// An argument value as graph JSON spells it (docs/graph-json.md, "VALUE"). The same type
// carries graph arguments (with node references) and runtime values (with tensors) in the
// interpreter.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/scalar.h"
#include "core/tensor.h"

namespace inplace {

struct Node;

struct Value {
  enum class Kind : uint8_t {
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kTuple,
    kDict,
    kNode,
    kSlice,
    kEllipsis,
    kDType,
    kDevice,
    kTensor,
  };
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::string s;                  // string, device
  std::vector<Value> items;       // list, tuple, dict values, slice [start, stop, step]
  std::vector<std::string> keys;  // dict keys (ordered)
  Node* node = nullptr;
  DType dtype = DType::kFloat32;
  Tensor tensor;

  Value() = default;
  static Value none() { return {}; }
  static Value boolean(bool v) {
    Value x;
    x.kind = Kind::kBool;
    x.b = v;
    return x;
  }
  static Value integer(int64_t v) {
    Value x;
    x.kind = Kind::kInt;
    x.i = v;
    return x;
  }
  static Value floating(double v) {
    Value x;
    x.kind = Kind::kFloat;
    x.f = v;
    return x;
  }
  static Value string(std::string v) {
    Value x;
    x.kind = Kind::kString;
    x.s = std::move(v);
    return x;
  }
  static Value list(std::vector<Value> v) {
    Value x;
    x.kind = Kind::kList;
    x.items = std::move(v);
    return x;
  }
  static Value tuple(std::vector<Value> v) {
    Value x;
    x.kind = Kind::kTuple;
    x.items = std::move(v);
    return x;
  }
  static Value dict(std::vector<std::string> k, std::vector<Value> v);
  static Value node_ref(Node* n) {
    Value x;
    x.kind = Kind::kNode;
    x.node = n;
    return x;
  }
  static Value slice(Value start, Value stop, Value step);
  static Value ellipsis() {
    Value x;
    x.kind = Kind::kEllipsis;
    return x;
  }
  static Value dtype_value(DType t) {
    Value x;
    x.kind = Kind::kDType;
    x.dtype = t;
    return x;
  }
  static Value device(std::string d) {
    Value x;
    x.kind = Kind::kDevice;
    x.s = std::move(d);
    return x;
  }
  static Value from_tensor(Tensor t) {
    Value x;
    x.kind = Kind::kTensor;
    x.tensor = std::move(t);
    return x;
  }
  static Value from_scalar(Scalar s);
  static Value int_list(const std::vector<int64_t>& v);

  bool is_none() const { return kind == Kind::kNone; }
  bool is_tensor() const { return kind == Kind::kTensor; }
  // `:` (or `0::1`): a slice that keeps the whole dim.
  bool is_full_slice() const;
  bool is_node() const { return kind == Kind::kNode; }
  bool is_number() const {
    return kind == Kind::kBool || kind == Kind::kInt || kind == Kind::kFloat;
  }
  bool is_sequence() const { return kind == Kind::kList || kind == Kind::kTuple; }

  // Conversions with errors that name `what` (an argument name).
  const Tensor& as_tensor(const char* what) const;
  Scalar as_scalar(const char* what) const;  // bool/int/float, or a 1-element tensor
  int64_t as_int(const char* what) const;    // also a 1-element integer tensor
  double as_double(const char* what) const;
  bool as_bool(const char* what) const;
  std::vector<int64_t> as_int_list(const char* what) const;  // an int is a 1-list
  DType as_dtype(const char* what) const;
  const std::string& as_string(const char* what) const;

  // Python-like text: for the printer and error messages.
  std::string to_string() const;
  const char* kind_name() const;
};

// Visits every node reference inside a value (nested lists, tuples, dicts, slices).
template <typename F>
void for_each_node(const Value& v, F&& f) {
  if (v.kind == Value::Kind::kNode) f(v.node);
  for (const Value& c : v.items) for_each_node(c, f);
}
template <typename F>
void for_each_node_mut(Value& v, F&& f) {
  if (v.kind == Value::Kind::kNode) f(v.node);
  for (Value& c : v.items) for_each_node_mut(c, f);
}

// Flattens nested tuples/lists into a flat list of leaves (the order outputs are numbered in).
void flatten_value(const Value& v, std::vector<Value>* out);

}  // namespace inplace
