// Reading and writing safetensors files of many small tensors: the header's cost alone (one
// float32 element per tensor, the JSON header about 80 bytes a tensor). Linear in the tensor
// count since the header's JSON object is built by appending (it was quadratic: 160k tensors
// took 22 s). Wall and CPU seconds per count (docs/performance.md).
//
//   build/bench/safetensors_bench 100000 400000 1280000
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "core/error.h"
#include "frontend/safetensors.h"

using namespace inplace;

namespace {

std::string many_tensors_file(int n) {
  std::string header = "{";
  for (int k = 0; k < n; ++k) {
    if (k) header += ',';
    header += str_cat("\"layer.", k, ".w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[",
                      4 * k, ",", 4 * k + 4, "]}");
  }
  header += "}";
  std::string out(8, '\0');
  uint64_t len = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  out += header;
  out.append(4 * static_cast<size_t>(n), '\0');
  return out;
}

struct Clock {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  std::clock_t cpu = std::clock();
  double wall_s() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  }
  double cpu_s() const { return static_cast<double>(std::clock() - cpu) / CLOCKS_PER_SEC; }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s COUNT...\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    const int n = std::atoi(argv[i]);
    const std::string bytes = many_tensors_file(n);
    Clock r;
    auto tensors = read_safetensors_bytes(bytes, "<bench>");
    const double read_wall = r.wall_s(), read_cpu = r.cpu_s();
    Clock w;
    const std::string written = write_safetensors_bytes(tensors);
    const double write_wall = w.wall_s(), write_cpu = w.cpu_s();
    std::printf("%d tensors, header %.1f MB: read %.2f s (cpu %.2f s), write %.2f s (cpu %.2f s)\n",
                n, static_cast<double>(bytes.size()) / 1e6, read_wall, read_cpu, write_wall,
                write_cpu);
  }
  return 0;
}
