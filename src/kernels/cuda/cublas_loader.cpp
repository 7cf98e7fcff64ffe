#include "kernels/cuda/cublas_loader.h"

#include <dlfcn.h>

#include <string>

#include "core/error.h"

namespace inplace::cuda {

namespace {

void* open_library() {
  // The toolkit's own folder (where the build found it) after the loader's search path.
  for (const std::string name : {std::string("libcublas.so.13"), std::string("libcublas.so"),
                                 std::string(INPLACE_CUDA_LIBRARY_DIR) + "/libcublas.so.13",
                                 std::string(INPLACE_CUDA_LIBRARY_DIR) + "/libcublas.so"})
    if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  IP_FAIL(kUnsupported, "[cuda] cannot load cuBLAS (libcublas.so.13, also looked in ",
          INPLACE_CUDA_LIBRARY_DIR, "): ", dlerror());
}

template <typename F>
F symbol(void* library, const char* name) {
  void* p = dlsym(library, name);
  IP_CHECK(p != nullptr, kUnsupported, "[cuda] cuBLAS has no symbol ", name);
  return reinterpret_cast<F>(p);
}

}  // namespace

const Cublas& cublas() {
  static const Cublas table = [] {
    void* h = open_library();
    Cublas c;
    c.create = symbol<decltype(c.create)>(h, "cublasCreate_v2");
    c.destroy = symbol<decltype(c.destroy)>(h, "cublasDestroy_v2");
    c.set_stream = symbol<decltype(c.set_stream)>(h, "cublasSetStream_v2");
    c.set_workspace = symbol<decltype(c.set_workspace)>(h, "cublasSetWorkspace_v2");
    c.gemm = symbol<decltype(c.gemm)>(h, "cublasGemmEx");
    c.gemm_strided_batched =
        symbol<decltype(c.gemm_strided_batched)>(h, "cublasGemmStridedBatchedEx");
    return c;
  }();
  return table;
}

}  // namespace inplace::cuda
