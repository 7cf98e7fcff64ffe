// Helpers shared by the indexing op tests: element access by coordinates and error matching.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "test_util.h"

namespace inplace::testing {

// Element of t at coordinates idx, as double.
inline double get(const Tensor& t, const std::vector<int64_t>& idx) {
  int64_t flat = 0;
  for (size_t d = 0; d < idx.size(); ++d) flat = flat * t.shape()[d] + idx[d];
  return t.at(flat);
}

inline Value E() {
  return Value::ellipsis();
}
inline Value All() {
  return Sl(None(), None(), None());
}

// Runs f, expects an inplace::Error whose message contains every part.
template <typename F>
::testing::AssertionResult throws_with(F&& f, std::vector<std::string> parts) {
  try {
    f();
  } catch (const Error& e) {
    std::string msg = e.what();
    for (const auto& p : parts)
      if (msg.find(p) == std::string::npos)
        return ::testing::AssertionFailure() << "message '" << msg << "' lacks '" << p << "'";
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no error thrown";
}

}  // namespace inplace::testing
