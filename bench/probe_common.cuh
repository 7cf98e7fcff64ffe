// What the standalone GPU probes (pdl_chain_probe.cu, persistent_chain_probe.cu) share: the
// error check, issue 11's model sizes, its bf16 weights and float32 activations in device
// memory, and the HBM read bandwidth measured in the run.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CK(x)                                                          \
  do {                                                                 \
    cudaError_t e = (x);                                               \
    if (e != cudaSuccess) {                                            \
      printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
      exit(1);                                                         \
    }                                                                  \
  } while (0)

namespace probe {

typedef __nv_bfloat16 bf16;

// Issue 11's model: layers, d_model, SwiGLU width, vocab, q/k/v rows (16 + 2 x 4 heads of 64).
constexpr int kLayers = 12, kD = 1024, kF = 2816, kV = 16384, kQkv = 1536;

// Weights (filled with one bf16 value) counted as they are made; activations zeroed.
struct Buffers {
  size_t weight_bytes = 0;
  float *h, *qkv, *act, *logits, *normw;
  Buffers() {
    zeros(&h, kD);
    zeros(&qkv, kQkv);
    zeros(&act, kF);
    zeros(&logits, kV);
    zeros(&normw, 4096);
  }
  static void zeros(float** p, size_t n) {
    CK(cudaMalloc(p, n * 4));
    CK(cudaMemset(*p, 0, n * 4));
  }
  bf16* weight(size_t n) {
    bf16* p;
    CK(cudaMalloc(&p, n * 2));
    CK(cudaMemset(p, 0x3c, n * 2));
    weight_bytes += n * 2;
    return p;
  }
};

__global__ void readbw(const uint4* p, size_t n, uint4* out) {
  uint4 acc = {0, 0, 0, 0};
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    const uint4 v = __ldcs(p + i);
    acc.x ^= v.x;
    acc.y ^= v.y;
    acc.z ^= v.z;
    acc.w ^= v.w;
  }
  if (acc.x == 0x12345678) out[0] = acc;
}

// Bytes a second the device reads: five streaming passes over 2 GiB, after one warm-up pass.
inline double read_bandwidth(cudaStream_t s) {
  const size_t n = (size_t)2 << 30;
  uint4* p;
  CK(cudaMalloc(&p, n));
  CK(cudaMemset(p, 1, n));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  readbw<<<132 * 8, 512, 0, s>>>(p, n / 16, p);
  CK(cudaEventRecord(e0, s));
  for (int i = 0; i < 5; ++i) readbw<<<132 * 8, 512, 0, s>>>(p, n / 16, p);
  CK(cudaEventRecord(e1, s));
  CK(cudaEventSynchronize(e1));
  float ms;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaFree(p));
  return 5.0 * n / (ms * 1e-3);
}

}  // namespace probe
