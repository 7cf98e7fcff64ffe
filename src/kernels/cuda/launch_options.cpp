// How kernels are launched, from the environment (launch.h): read once per process.
#include <cstdlib>
#include <cstring>

#include "kernels/cuda/launch.h"

namespace inplace::cuda {

bool pdl_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("INPLACE_CUDA_PDL");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

GemvPath gemv_half_path() {
  static const GemvPath path = [] {
    const char* v = std::getenv("INPLACE_CUDA_GEMV");
    if (v && std::strcmp(v, "stream") == 0) return GemvPath::kStream;
    if (v && std::strcmp(v, "columns") == 0) return GemvPath::kColumns;
    return GemvPath::kAuto;
  }();
  return path;
}

bool prologues_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("INPLACE_CUDA_PROLOGUES");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

}  // namespace inplace::cuda
