// cuBLAS, loaded on first use rather than linked: libcublas and libcublasLt are large, and
// linking them costs every process of the build (each test, each `inplace` command) seconds at
// start-up, GPU or not. The CUDA matrix kernels call cuBLAS through this table.
#pragma once
#include <cublas_v2.h>

namespace inplace::cuda {

struct Cublas {
  decltype(&cublasCreate) create;
  decltype(&cublasDestroy) destroy;
  decltype(&cublasSetStream) set_stream;
  decltype(&cublasSetWorkspace) set_workspace;
  // The C entry points (C++ also declares overloads taking cudaDataType_t as compute type).
  cublasStatus_t (*gemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                         const void*, const void*, cudaDataType_t, int, const void*, cudaDataType_t,
                         int, const void*, void*, cudaDataType_t, int, cublasComputeType_t,
                         cublasGemmAlgo_t);
  cublasStatus_t (*gemm_strided_batched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                         int, int, const void*, const void*, cudaDataType_t, int,
                                         long long, const void*, cudaDataType_t, int, long long,
                                         const void*, void*, cudaDataType_t, int, long long, int,
                                         cublasComputeType_t, cublasGemmAlgo_t);
};

// Loads libcublas once (thread-safe); an error naming the library when it cannot.
const Cublas& cublas();

}  // namespace inplace::cuda
