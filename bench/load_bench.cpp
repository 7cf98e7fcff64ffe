// Loading a saved engine or program file (e.g. `inplace demo --save FILE`): the checksum's
// speed on the file's bytes in memory (XXH3-64, what files use since engine ABI 3, next to the
// FNV-1a 64 they used before), then the load itself (load_program_or_engine: the file read into
// private memory that the weights view) and from bytes read into a string first (every weight
// copied out of it again). Best of `reps`.
//
//   build/bench/load_bench FILE [reps]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/checksum.h"
#include "core/file_io.h"
#include "core/mapped_file.h"
#include "engine/engine_file.h"
#include "program/program_file.h"

using namespace inplace;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <typename F>
double best_of(int reps, F&& f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

uint64_t fnv1a(const std::string& bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [reps]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::string bytes = read_regular_file(path, "load_bench");
  const double gb = static_cast<double>(bytes.size()) / 1e9;
  volatile uint64_t sink = 0;
  const double xxh = best_of(reps, [&] { sink = sink + checksum64(bytes); });
  const double fnv = best_of(reps, [&] { sink = sink + fnv1a(bytes); });
  std::printf("%s: %.1f MB\n", path.c_str(), gb * 1e3);
  std::printf("checksum XXH3-64: %.1f ms, %.1f GB/s\n", xxh * 1e3, gb / xxh);
  std::printf("checksum FNV-1a 64 (before): %.1f ms, %.2f GB/s\n", fnv * 1e3, gb / fnv);
  const double read_only = best_of(reps, [&] {
    auto file = MappedFile::open(path, "load_bench");
    sink = sink + checksum64(file->bytes());
  });
  const double loaded = best_of(reps, [&] { load_program_or_engine(path); });
  const double copied = best_of(reps, [&] {
    const std::string b = read_regular_file(path, "load_bench");
    if (is_engine_file(b))
      deserialize_engine(b, path);
    else
      deserialize_program(b, path);
  });
  std::printf(
      "read into private memory + checksum: %.1f ms; load from the path: %.1f ms; read into a "
      "string, then load (copies the weights again): %.1f ms\n",
      read_only * 1e3, loaded * 1e3, copied * 1e3);
  return 0;
}
