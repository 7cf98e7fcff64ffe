// A Python number: bool, int or float.
#pragma once
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace inplace {

class Scalar {
 public:
  enum class Kind : uint8_t { kBool, kInt, kFloat };
  Scalar() : kind_(Kind::kInt), i_(0) {}
  Scalar(bool b) : kind_(Kind::kBool), i_(b) {}     // NOLINT
  Scalar(int v) : kind_(Kind::kInt), i_(v) {}       // NOLINT
  Scalar(int64_t v) : kind_(Kind::kInt), i_(v) {}   // NOLINT
  Scalar(double v) : kind_(Kind::kFloat), f_(v) {}  // NOLINT
  Scalar(float v) : kind_(Kind::kFloat), f_(v) {}   // NOLINT

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }

  double to_double() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(i_); }
  int64_t to_int() const { return kind_ == Kind::kFloat ? static_cast<int64_t>(f_) : i_; }
  bool to_bool() const { return kind_ == Kind::kFloat ? f_ != 0.0 : i_ != 0; }

  // The value as element type T (float -> int truncates, as torch does).
  template <typename T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>)
      return to_bool();
    else if constexpr (kIsFloat<T>)
      return convert<T>(to_double());
    else
      return kind_ == Kind::kFloat ? static_cast<T>(f_) : static_cast<T>(i_);
  }

  // The dtype torch gives a tensor made from this number with no dtype argument.
  DType default_dtype() const {
    return kind_ == Kind::kBool ? DType::kBool
                                : (kind_ == Kind::kInt ? DType::kInt64 : DType::kFloat32);
  }
  std::string to_string() const;

 private:
  Kind kind_;
  union {
    int64_t i_;
    double f_;
  };
};

}  // namespace inplace
