#include "memory_usage.h"

#include <malloc.h>

#include <fstream>
#include <string>

namespace inplace::cli {

namespace {
int64_t status_kib(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(key) + ":";
  while (std::getline(f, line))
    if (line.compare(0, prefix.size(), prefix) == 0) return std::stoll(line.substr(prefix.size()));
  return -1;
}
}  // namespace

int64_t current_rss_bytes() {
  int64_t k = status_kib("VmRSS");
  return k < 0 ? -1 : k * 1024;
}

int64_t peak_rss_since_reset_bytes() {
  int64_t k = status_kib("VmHWM");
  return k < 0 ? -1 : k * 1024;
}

bool reset_peak_rss() {
  malloc_trim(0);
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return f.good();
}

}  // namespace inplace::cli
