// Process-wide backend settings (Backend::set_process_option): the cpu takes blas_threads (what
// `inplace bench` sets to one thread), refuses a bad count and any other key, naming them.
#include <gtest/gtest.h>

#include "backend/backend.h"
#include "core/error.h"

namespace inplace {
namespace {

std::string error_of(const std::string& key, const std::string& value) {
  try {
    backend_for(Device::cpu()).set_process_option(key, value);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(BackendProcessOption, TheCpuTakesBlasThreadsAndRefusesTheRest) {
  EXPECT_EQ(error_of("blas_threads", "1"), "");
  EXPECT_NE(error_of("blas_threads", "0").find("blas_threads takes a thread count of at least 1"),
            std::string::npos);
  EXPECT_NE(error_of("blas_threads", "many").find("got 'many'"), std::string::npos);
  EXPECT_NE(error_of("cuda_graph", "on").find("unknown process option 'cuda_graph'"),
            std::string::npos);
}

}  // namespace
}  // namespace inplace
