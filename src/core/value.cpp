#include "core/value.h"

#include <sstream>

#include "core/error.h"

namespace inplace {

Value Value::dict(std::vector<std::string> k, std::vector<Value> v) {
  IP_ASSERT(k.size() == v.size(), "dict keys and values pair up");
  Value x;
  x.kind = Kind::kDict;
  x.keys = std::move(k);
  x.items = std::move(v);
  return x;
}

Value Value::slice(Value start, Value stop, Value step) {
  Value x;
  x.kind = Kind::kSlice;
  x.items = {std::move(start), std::move(stop), std::move(step)};
  return x;
}

bool Value::is_full_slice() const {
  if (kind != Kind::kSlice || items.size() != 3) return false;
  const Value &start = items[0], &stop = items[1], &step = items[2];
  return (start.is_none() || (start.kind == Kind::kInt && start.i == 0)) && stop.is_none() &&
         (step.is_none() || (step.kind == Kind::kInt && step.i == 1));
}

Value Value::from_scalar(Scalar s) {
  if (s.is_bool()) return boolean(s.to_bool());
  if (s.is_int()) return integer(s.to_int());
  return floating(s.to_double());
}

Value Value::int_list(const std::vector<int64_t>& v) {
  std::vector<Value> items;
  for (int64_t x : v) items.push_back(integer(x));
  return list(std::move(items));
}

const char* Value::kind_name() const {
  switch (kind) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return "list";
    case Kind::kTuple:
      return "tuple";
    case Kind::kDict:
      return "dict";
    case Kind::kNode:
      return "node";
    case Kind::kSlice:
      return "slice";
    case Kind::kEllipsis:
      return "Ellipsis";
    case Kind::kDType:
      return "dtype";
    case Kind::kDevice:
      return "device";
    case Kind::kTensor:
      return "Tensor";
  }
  return "?";
}

const Tensor& Value::as_tensor(const char* what) const {
  IP_CHECK(kind == Kind::kTensor, kInvalidArgument, "[", what, "] expected a Tensor, got ",
           kind_name());
  return tensor;
}

Scalar Value::as_scalar(const char* what) const {
  switch (kind) {
    case Kind::kBool:
      return Scalar(b);
    case Kind::kInt:
      return Scalar(i);
    case Kind::kFloat:
      return Scalar(f);
    case Kind::kTensor:
      IP_CHECK(tensor.numel() == 1, kInvalidArgument, "[", what,
               "] expected a number, got a tensor of shape ", shape_str(tensor.shape()));
      return tensor.item();
    default:
      IP_FAIL(kInvalidArgument, "[", what, "] expected a number, got ", kind_name());
  }
}

int64_t Value::as_int(const char* what) const {
  if (kind == Kind::kInt) return i;
  if (kind == Kind::kBool) return b;
  if (kind == Kind::kTensor && tensor.numel() == 1 && !is_floating(tensor.dtype()))
    return tensor.item().to_int();
  IP_FAIL(kInvalidArgument, "[", what, "] expected an int, got ", kind_name());
}

double Value::as_double(const char* what) const {
  return as_scalar(what).to_double();
}

bool Value::as_bool(const char* what) const {
  if (kind == Kind::kBool) return b;
  if (kind == Kind::kInt) return i != 0;
  IP_FAIL(kInvalidArgument, "[", what, "] expected a bool, got ", kind_name());
}

std::vector<int64_t> Value::as_int_list(const char* what) const {
  if (kind == Kind::kInt) return {i};
  IP_CHECK(is_sequence(), kInvalidArgument, "[", what, "] expected a list of ints, got ",
           kind_name());
  std::vector<int64_t> out;
  for (const Value& v : items) out.push_back(v.as_int(what));
  return out;
}

DType Value::as_dtype(const char* what) const {
  if (kind == Kind::kDType) return dtype;
  if (kind == Kind::kString) return dtype_from_name(s);
  IP_FAIL(kInvalidArgument, "[", what, "] expected a dtype, got ", kind_name());
}

const std::string& Value::as_string(const char* what) const {
  IP_CHECK(kind == Kind::kString || kind == Kind::kDevice, kInvalidArgument, "[", what,
           "] expected a string, got ", kind_name());
  return s;
}

void flatten_value(const Value& v, std::vector<Value>* out) {
  if (v.is_sequence()) {
    for (const Value& x : v.items) flatten_value(x, out);
  } else {
    out->push_back(v);
  }
}

}  // namespace inplace
