// Element types with torch names and PyTorch's type-promotion rules.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/half.h"

namespace inplace {

enum class DType : uint8_t {
  kFloat32,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt64,
  kInt32,
  kInt16,
  kInt8,
  kUInt8,
  kBool,
};
inline constexpr int kNumDTypes = 10;

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // torch name: "float32"
// Accepts torch names and their aliases ("float", "torch.float32", "long", "half", ...).
bool parse_dtype(std::string_view name, DType* out);
DType dtype_from_name(std::string_view name);  // throws naming the string

bool is_floating(DType t);
bool is_integral(DType t, bool include_bool);
inline bool is_bool(DType t) {
  return t == DType::kBool;
}

// torch.promote_types.
DType promote_types(DType a, DType b);

// Whether a value of `from` may be written into `to` by an in-place op (torch.can_cast).
bool can_cast(DType from, DType to);

// torch.result_type over tensors and Python scalars: dim>0 tensors outrank 0-dim tensors,
// which outrank Python scalars, unless the lower group is of a higher category.
class ResultType {
 public:
  void add_tensor(DType t, int64_t dim);
  void add_scalar_bool() { add_wrapped(DType::kBool); }
  void add_scalar_int() { add_wrapped(DType::kInt64); }
  void add_scalar_float() { add_wrapped(DType::kFloat32); }  // default dtype float32
  DType result() const;

 private:
  void add_wrapped(DType t);
  int dim_ = -1, zero_ = -1, wrapped_ = -1;  // -1: none yet
};

template <DType D>
struct DTypeTraits;
template <>
struct DTypeTraits<DType::kFloat32> {
  using type = float;
};
template <>
struct DTypeTraits<DType::kFloat64> {
  using type = double;
};
template <>
struct DTypeTraits<DType::kFloat16> {
  using type = Half;
};
template <>
struct DTypeTraits<DType::kBFloat16> {
  using type = BFloat16;
};
template <>
struct DTypeTraits<DType::kInt64> {
  using type = int64_t;
};
template <>
struct DTypeTraits<DType::kInt32> {
  using type = int32_t;
};
template <>
struct DTypeTraits<DType::kInt16> {
  using type = int16_t;
};
template <>
struct DTypeTraits<DType::kInt8> {
  using type = int8_t;
};
template <>
struct DTypeTraits<DType::kUInt8> {
  using type = uint8_t;
};
template <>
struct DTypeTraits<DType::kBool> {
  using type = bool;
};

// The type arithmetic runs in (PyTorch's opmath): float for half types.
template <typename T>
struct OpMath {
  using type = T;
};
template <>
struct OpMath<Half> {
  using type = float;
};
template <>
struct OpMath<BFloat16> {
  using type = float;
};
template <typename T>
using opmath_t = typename OpMath<T>::type;

template <typename T>
constexpr bool kIsFloat =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// visit_dtype(t, [&]<typename T>() { ... }) calls the lambda with T the C++ element type.
template <typename F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32:
      return f.template operator()<float>();
    case DType::kFloat64:
      return f.template operator()<double>();
    case DType::kFloat16:
      return f.template operator()<Half>();
    case DType::kBFloat16:
      return f.template operator()<BFloat16>();
    case DType::kInt64:
      return f.template operator()<int64_t>();
    case DType::kInt32:
      return f.template operator()<int32_t>();
    case DType::kInt16:
      return f.template operator()<int16_t>();
    case DType::kInt8:
      return f.template operator()<int8_t>();
    case DType::kUInt8:
      return f.template operator()<uint8_t>();
    case DType::kBool:
      return f.template operator()<bool>();
  }
  return f.template operator()<float>();
}

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return DType::kFloat32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::kFloat64;
  else if constexpr (std::is_same_v<T, Half>)
    return DType::kFloat16;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return DType::kBFloat16;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::kInt64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::kInt32;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DType::kInt16;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DType::kInt8;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::kUInt8;
  else
    return DType::kBool;
}

// Floating -> integer as PyTorch's static_cast compiles on x86, without C++'s undefined
// behaviour for values out of range: truncate toward zero through a 32-bit conversion (int8,
// int16, int32) or a 64-bit one (uint8 — as c10 does, so -2.5 -> 254 — and int64), then wrap to
// the width. NaN and values outside the intermediate type give its minimum, as cvttsd2si does.
template <typename To>
inline To float_to_int(double v) {
  if constexpr (sizeof(To) == 8 || std::is_same_v<To, uint8_t>) {
    const bool in_range = v >= -9223372036854775808.0 && v < 9223372036854775808.0;
    const int64_t i = in_range ? static_cast<int64_t>(v) : std::numeric_limits<int64_t>::min();
    return static_cast<To>(i);
  } else {
    const bool in_range = v > -2147483649.0 && v < 2147483648.0;
    const int32_t i = in_range ? static_cast<int32_t>(v) : std::numeric_limits<int32_t>::min();
    return static_cast<To>(i);
  }
}

// Converts between element types as PyTorch's static_cast-based copy does
// (float -> int truncates; anything -> bool is != 0).
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>)
      return static_cast<float>(v) != 0.0f;
    else
      return v != From(0);
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    if constexpr (std::is_integral_v<To>)
      return float_to_int<To>(static_cast<float>(v));
    else
      return static_cast<To>(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return float_to_int<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace inplace
