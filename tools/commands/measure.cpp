#include "measure.h"

#include "backend/backend.h"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace inplace::cli {

int64_t parse_int_option(const std::string& option, const std::string& value, int64_t lo,
                         int64_t hi) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || value.empty() || v < lo || v > hi)
    throw UsageError(option + " expects an integer in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], got '" + value + "'");
  return v;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

double ms_since(int64_t start_ns) {
  return static_cast<double>(now_ns() - start_ns) / 1e6;
}

int64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto i = static_cast<size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(i, values.size() - 1)];
}

}  // namespace inplace::cli

namespace inplace::cli {

void single_threaded_blas() {
  backend_for(Device::cpu()).set_process_option("blas_threads", "1");
}

DType parse_weight_dtype(const std::string& value) {
  if (value == "f32" || value == "float32") return DType::kFloat32;
  if (value == "bf16" || value == "bfloat16") return DType::kBFloat16;
  throw UsageError("--dtype expects f32 or bf16, got '" + value + "'");
}

}  // namespace inplace::cli
