#include "memory_usage.h"

#include <malloc.h>
#include <sys/mman.h>

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

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

struct Mapping {
  uintptr_t begin = 0, end = 0;
  std::string perms, path;
  int64_t anonymous_kib = -1;  // copy-on-write pages (relocated data): never dropped
};

std::vector<Mapping> mappings() {
  std::vector<Mapping> out;
  std::ifstream f("/proc/self/smaps");
  std::string line;
  while (std::getline(f, line)) {
    uintptr_t b = 0, e = 0;
    char perms[8] = {};
    int path_at = -1;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " %7s %*s %*s %*s %n", &b, &e, perms,
                    &path_at) == 3 &&
        path_at > 0) {
      out.push_back({b, e, perms, line.substr(static_cast<size_t>(path_at)), -1});
    } else if (!out.empty() && line.rfind("Anonymous:", 0) == 0) {
      out.back().anonymous_kib = std::stoll(line.substr(10));
    }
  }
  return out;
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

int64_t drop_clean_code_pages() {
  const std::vector<Mapping> maps = mappings();
  // The binary and its shared libraries: the files some mapping executes (an engine file's
  // weights are mapped read-only, never executable, and stay).
  std::set<std::string> code_files;
  for (const Mapping& m : maps)
    if (m.perms.size() == 4 && m.perms[2] == 'x' && !m.path.empty() && m.path[0] == '/')
      code_files.insert(m.path);
  int64_t dropped = 0;
  for (const Mapping& m : maps) {
    // Private, not writable, no copy-on-write page: every page equals the file's, so dropping it
    // loses nothing (the next access maps it again from the page cache).
    if (m.perms.size() != 4 || m.perms[1] == 'w' || m.perms[3] != 'p' || m.anonymous_kib != 0 ||
        code_files.count(m.path) == 0)
      continue;
    if (madvise(reinterpret_cast<void*>(m.begin), m.end - m.begin, MADV_DONTNEED) == 0)
      dropped += static_cast<int64_t>(m.end - m.begin);
  }
  return dropped;
}

bool reset_peak_rss() {
  malloc_trim(0);
  drop_clean_code_pages();
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return f.good();
}

}  // namespace inplace::cli
