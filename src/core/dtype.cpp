#include "core/dtype.h"

#include "core/error.h"

namespace inplace {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt16:
      return 2;
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool:
      return 1;
  }
  return 1;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kInt64:
      return "int64";
    case DType::kInt32:
      return "int32";
    case DType::kInt16:
      return "int16";
    case DType::kInt8:
      return "int8";
    case DType::kUInt8:
      return "uint8";
    case DType::kBool:
      return "bool";
  }
  return "?";
}

bool parse_dtype(std::string_view name, DType* out) {
  if (name.substr(0, 6) == "torch.") name.remove_prefix(6);
  struct Entry {
    const char* name;
    DType t;
  };
  static const Entry kNames[] = {
      {"float32", DType::kFloat32},   {"float", DType::kFloat32},   {"float64", DType::kFloat64},
      {"double", DType::kFloat64},    {"float16", DType::kFloat16}, {"half", DType::kFloat16},
      {"bfloat16", DType::kBFloat16}, {"int64", DType::kInt64},     {"long", DType::kInt64},
      {"int32", DType::kInt32},       {"int", DType::kInt32},       {"int16", DType::kInt16},
      {"short", DType::kInt16},       {"int8", DType::kInt8},       {"uint8", DType::kUInt8},
      {"bool", DType::kBool},         {"F32", DType::kFloat32},     {"F64", DType::kFloat64},
      {"F16", DType::kFloat16},       {"BF16", DType::kBFloat16},   {"I64", DType::kInt64},
      {"I32", DType::kInt32},         {"I16", DType::kInt16},       {"I8", DType::kInt8},
      {"U8", DType::kUInt8},          {"BOOL", DType::kBool},
  };
  for (const auto& e : kNames) {
    if (name == e.name) {
      *out = e.t;
      return true;
    }
  }
  return false;
}

DType dtype_from_name(std::string_view name) {
  DType t;
  IP_CHECK(parse_dtype(name, &t), kInvalidArgument, "[dtype] unknown dtype '", name, "'");
  return t;
}

bool is_floating(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 ||
         t == DType::kBFloat16;
}

bool is_integral(DType t, bool include_bool) {
  switch (t) {
    case DType::kInt64:
    case DType::kInt32:
    case DType::kInt16:
    case DType::kInt8:
    case DType::kUInt8:
      return true;
    case DType::kBool:
      return include_bool;
    default:
      return false;
  }
}

namespace {
int int_rank(DType t) {
  switch (t) {
    case DType::kInt8:
      return 1;
    case DType::kInt16:
      return 2;
    case DType::kInt32:
      return 3;
    case DType::kInt64:
      return 4;
    default:
      return 0;
  }
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::kBool) return b;
  if (b == DType::kBool) return a;
  bool fa = is_floating(a), fb = is_floating(b);
  if (fa && !fb) return a;
  if (fb && !fa) return b;
  if (fa && fb) {
    if (a == DType::kFloat64 || b == DType::kFloat64) return DType::kFloat64;
    if (a == DType::kFloat32 || b == DType::kFloat32) return DType::kFloat32;
    return DType::kFloat32;  // float16 with bfloat16
  }
  // both integral, not bool
  if (a == DType::kUInt8) return b == DType::kInt8 ? DType::kInt16 : b;
  if (b == DType::kUInt8) return a == DType::kInt8 ? DType::kInt16 : a;
  return int_rank(a) >= int_rank(b) ? a : b;
}

namespace {
int category(DType t) {
  return t == DType::kBool ? 0 : (is_floating(t) ? 2 : 1);
}
}  // namespace

bool can_cast(DType from, DType to) {
  return category(from) <= category(to);
}

void ResultType::add_tensor(DType t, int64_t dim) {
  int& slot = dim > 0 ? dim_ : zero_;
  slot = slot < 0 ? static_cast<int>(t) : static_cast<int>(promote_types(DType(slot), t));
}

void ResultType::add_wrapped(DType t) {
  wrapped_ =
      wrapped_ < 0 ? static_cast<int>(t) : static_cast<int>(promote_types(DType(wrapped_), t));
}

namespace {
// c10's combine_categories with -1 as Undefined.
int combine(int higher, int lower) {
  if (higher < 0) return lower;
  if (lower < 0) return higher;
  DType h = DType(higher), l = DType(lower);
  if (is_floating(h)) return higher;
  if (h == DType::kBool || is_floating(l)) return static_cast<int>(promote_types(h, l));
  return higher;
}
}  // namespace

DType ResultType::result() const {
  int r = combine(dim_, combine(zero_, wrapped_));
  return r < 0 ? DType::kFloat32 : DType(r);
}

}  // namespace inplace
