#include "core/error.h"

namespace inplace {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kShapeMismatch:
      return "shape_mismatch";
    case ErrorCode::kDTypeMismatch:
      return "dtype_mismatch";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kParse:
      return "parse";
    case ErrorCode::kIO:
      return "io";
    case ErrorCode::kOutOfRange:
      return "out_of_range";
    case ErrorCode::kAbiMismatch:
      return "abi_mismatch";
    case ErrorCode::kCorrupt:
      return "corrupt";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

void throw_error(ErrorCode code, const std::string& message) {
  throw Error(code, message);
}

}  // namespace inplace
