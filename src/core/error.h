// Errors a caller can cause (bad graph, bad file, bad binding) are inplace::Error
// with a code and a bracketed message; broken invariants use IP_ASSERT.
#pragma once
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace inplace {

enum class ErrorCode {
  kInvalidArgument,
  kShapeMismatch,
  kDTypeMismatch,
  kUnsupported,
  kNotFound,
  kParse,
  kIO,
  kOutOfRange,
  kAbiMismatch,
  kCorrupt,
  kInternal,
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

template <typename... Parts>
std::string str_cat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

// "[2,4,16,8]"
std::string shape_str(const std::vector<int64_t>& shape);

[[noreturn]] void throw_error(ErrorCode code, const std::string& message);

}  // namespace inplace

// IP_CHECK(cond, code, "[op] message parts", ...) throws inplace::Error when cond is false.
#define IP_CHECK(cond, code, ...)                                                          \
  do {                                                                                     \
    if (!(cond))                                                                           \
      ::inplace::throw_error(::inplace::ErrorCode::code, ::inplace::str_cat(__VA_ARGS__)); \
  } while (0)

#define IP_FAIL(code, ...) \
  ::inplace::throw_error(::inplace::ErrorCode::code, ::inplace::str_cat(__VA_ARGS__))

// An internal invariant; names the invariant so a failure says what broke.
#define IP_ASSERT(cond, invariant)                                                                \
  do {                                                                                            \
    if (!(cond))                                                                                  \
      ::inplace::throw_error(::inplace::ErrorCode::kInternal,                                     \
                             ::inplace::str_cat("[internal] invariant broken: ", invariant, " (", \
                                                __FILE__, ":", __LINE__, ")"));                   \
  } while (0)
