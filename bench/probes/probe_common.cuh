// What the standalone GPU probes (pdl_chain_probe.cu, persistent_chain_probe.cu,
// streaming_chain_probe.cu, attention_start_probe.cu) share: the error check, issue 11's model
// sizes, its bf16 weights and float32 activations in device memory, the step's chain of
// products, the HBM read bandwidth measured in the run, a launch with programmatic dependence,
// and the per-step timing.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

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

// Mean microseconds of `reps` calls of run() on stream s, timed by events around them.
template <typename Run>
double mean_us(cudaStream_t s, Run&& run, int reps) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0, s));
  for (int i = 0; i < reps; ++i) run();
  CK(cudaEventRecord(e1, s));
  CK(cudaEventSynchronize(e1));
  float ms;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return ms * 1e3 / reps;
}

// Bytes a second the device reads: five streaming passes over 2 GiB, after one warm-up pass.
inline double read_bandwidth(cudaStream_t s) {
  const size_t n = (size_t)2 << 30;
  uint4* p;
  CK(cudaMalloc(&p, n));
  CK(cudaMemset(p, 1, n));
  readbw<<<132 * 8, 512, 0, s>>>(p, n / 16, p);
  const double us = mean_us(
      s, [&] { readbw<<<132 * 8, 512, 0, s>>>(p, n / 16, p); }, 5);
  CK(cudaFree(p));
  return n / (us * 1e-6);
}

// The step's 49 products in order (12 layers x {q/k/v + norm, o_proj + residual, gate/up + norm
// + silu*mul, down_proj + residual}, then the LM head + norm), each as add(w, w2, x, normw, res,
// y, n, k, kind) with kind 0 (k = 1024), 1 (k = 1024, SwiGLU: w2 the up weight) or 2 (k = 2816).
template <typename Add>
void model_chain(Buffers& b, Add&& add) {
  for (int l = 0; l < kLayers; ++l) {
    add(b.weight((size_t)kQkv * kD), nullptr, b.h, b.normw, nullptr, b.qkv, kQkv, kD, 0);
    add(b.weight((size_t)kD * kD), nullptr, b.qkv, nullptr, b.h, b.h, kD, kD, 0);
    bf16* gate = b.weight((size_t)kF * kD);
    add(gate, b.weight((size_t)kF * kD), b.h, b.normw, nullptr, b.act, kF, kD, 1);
    add(b.weight((size_t)kD * kF), nullptr, b.act, nullptr, b.h, b.h, kD, kF, 2);
  }
  add(b.weight((size_t)kV * kD), nullptr, b.h, b.normw, nullptr, b.logits, kV, kD, 0);
}

// A device copy of v.
template <typename T>
T* upload(const std::vector<T>& v) {
  T* p;
  CK(cudaMalloc(&p, v.size() * sizeof(T)));
  CK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}

// Measures the read bandwidth, prints it with the weights' floor (and the number of products
// when given), and returns it in bytes a second.
inline double report_floor(const Buffers& b, cudaStream_t s, size_t products = 0) {
  const double bw = read_bandwidth(s);
  printf("read bw %.2f TB/s; weights %.1f MB; floor %.1f us", bw / 1e12, b.weight_bytes / 1e6,
         b.weight_bytes / bw * 1e6);
  if (products > 0) printf("; %zu products", products);
  printf("\n");
  return bw;
}

// Microseconds a call of run() takes on stream s: 20 calls to warm up, then the mean of `reps`.
template <typename Run>
double step_us(cudaStream_t s, Run&& run, int reps = 200) {
  for (int i = 0; i < 20; ++i) run();
  return mean_us(s, run, reps);
}

// kernel<<<grid, block, smem, s>>>(args...) as a programmatic dependent launch when `pdl`, in
// clusters of `*cluster` when given.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, int smem, const dim3* cluster,
            bool pdl, cudaStream_t s, Args... args) {
  cudaLaunchConfig_t c = {};
  c.gridDim = grid;
  c.blockDim = block;
  c.dynamicSmemBytes = smem;
  c.stream = s;
  cudaLaunchAttribute at[2];
  int n = 0;
  if (pdl) {
    at[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster) {
    at[n].id = cudaLaunchAttributeClusterDimension;
    at[n].val.clusterDim.x = cluster->x;
    at[n].val.clusterDim.y = cluster->y;
    at[n++].val.clusterDim.z = cluster->z;
  }
  c.attrs = at;
  c.numAttrs = n;
  CK(cudaLaunchKernelEx(&c, kernel, static_cast<Params>(args)...));
}

}  // namespace probe
