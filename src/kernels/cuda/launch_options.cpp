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

bool gemv_deep_prefetch() {
  static const bool deep = [] {
    const char* v = std::getenv("INPLACE_CUDA_GEMV_AHEAD");
    return v == nullptr || std::strcmp(v, "1") != 0;
  }();
  return deep;
}

}  // namespace inplace::cuda
