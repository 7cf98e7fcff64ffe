// A standalone probe of when decode attention may start (docs/cuda.md, "Not yet"): issue 11's
// q/k/v product (1536 columns of 1024, bf16, with the k and v columns also written to the cache
// row of the position), then the decode attention of attention.cu (16 heads over 4 kv heads of
// 64, one 16-block cluster a head, attention_device.cuh's block walk and merge), then o_proj
// (1024 x 1024 + residual) for 12 layers, as programmatic dependent launches in one CUDA graph
// (36 launches a step), in two ways:
//   grid     attention waits for the whole q/k/v grid (griddepcontrol.wait), as on main;
//   counters each q/k/v block, after its stores, adds one (release) to the counter of every
//            query head its columns serve; attention's thread 0 polls its head's counter
//            (acquire) until the head's 24 blocks (8 q, 8 k, 8 v) have added, and block 0 of
//            the cluster sets it back to zero once every block is past its wait. A dependent
//            launch starts only once every block of the product has started, so the polls
//            cannot starve the product.
// The o_proj kernel waits for the whole attention grid in both. Each way's attention results
// are checked against the other's (same inputs, so equal to the last bit), then each is timed
// at positions 200 and 3000.
// Not part of the build; on a machine with an sm_90 GPU:
//   nvcc -O3 -std=c++20 --expt-relaxed-constexpr -arch=sm_90a -Isrc -Iinclude \
//     bench/attention_start_probe.cu -o attention_start_probe && ./attention_start_probe
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/cuda/attention_device.cuh"
#include "kernels/cuda/gemv_device.cuh"
#include "probe_common.cuh"

namespace {

using inplace::cuda::Attention;
using inplace::cuda::Operand;
using inplace::cuda::pdl_trigger;
using inplace::cuda::pdl_wait;
using inplace::cuda::gemv::dot8;
using inplace::cuda::gemv::widen8;
using probe::bf16;

constexpr int kHeads = 16, kKvHeads = 4, kE = 64, kG = kE / 4, kSMax = 4096;
constexpr int kQkvCols = (kHeads + 2 * kKvHeads) * kE;  // 1536
constexpr int kSplits = 16, kMinKeys = 64, kWarps = 8;
constexpr int kBlocksPerHead = 3 * kE / 8;  // q, k and v blocks of 8 columns feeding a head

struct Layer {
  const bf16 *wqkv, *wo;
  float *kc, *vc;  // [kKvHeads, kSMax, kE]
};

// Column `col` of w x for one row x of 1024, by one warp (every lane gets it): the weight row is
// fetched before the programmatic wait (the kernel's trigger and wait are here), x after.
__device__ inline float column(const bf16* w, int col, const float* x) {
  const int lane = threadIdx.x % 32;
  const bf16* wr = w + static_cast<size_t>(col) * 1024;
  uint4 raw[4];
#pragma unroll
  for (int u = 0; u < 4; ++u)
    raw[u] = __ldcs(reinterpret_cast<const uint4*>(wr + (u * 32 + lane) * 8));
  pdl_trigger();
  pdl_wait();
  float acc = 0.f;
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    const int k = (u * 32 + lane) * 8;
    float wf[8];
    widen8(raw[u], wf);
    acc += dot8(reinterpret_cast<const float4*>(x + k)[0],
                reinterpret_cast<const float4*>(x + k)[1], wf);
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(~0u, acc, o);
  return acc;
}

// y = W x for one row x of 1024 (one warp a column, eight columns a block); the k and v columns
// are also stored at the cache row `pos`. With counters, each block then signals the heads its
// columns serve.
template <bool kSignal>
__global__ void __launch_bounds__(256)
    qkv_kernel(Layer l, const float* x, float* y, int pos, unsigned* counters) {
  const int col = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
  const float acc = column(l.wqkv, col, x);
  if (lane == 0) {
    y[col] = acc;
    const int c = col - kHeads * kE;  // past the q columns: k, then v
    if (c >= 0) {
      float* cache = c < kKvHeads * kE ? l.kc : l.vc;
      const int cc = c % (kKvHeads * kE);
      cache[(static_cast<size_t>(cc / kE) * kSMax + pos) * kE + cc % kE] = acc;
    }
  }
  if (kSignal) {
    __syncthreads();
    if (threadIdx.x < 4) {  // a block's 8 columns lie in one head of q, k or v
      const int head = col / kE;
      if (head < kHeads) {
        if (threadIdx.x == 0)
          asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counters + head) : "memory");
      } else {
        const int hk = (head - kHeads) % kKvHeads, h = hk * (kHeads / kKvHeads) + threadIdx.x;
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counters + h) : "memory");
      }
    }
  }
}

// barrier.cluster in two halves, as attention.cu: the first phase is arrived at as a block
// starts and waited on before any block writes into block 0's shared memory.
__device__ inline void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ inline void cluster_wait_all() {
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}

__device__ inline int active_splits(int64_t keys) {
  const int a = static_cast<int>((keys + kMinKeys - 1) / kMinKeys);
  return a < 1 ? 1 : (a > kSplits ? kSplits : a);
}

// attention.cu's decode kernel at head dim 64 over keys 0..pos, its wait either the grid's or
// the head's counter.
template <bool kCounters>
__global__ void __launch_bounds__(32 * kWarps)
    attention_kernel(Attention a, int pos, unsigned* counters) {
  namespace cg = cooperative_groups;
  using namespace inplace::cuda::decode;
  cg::cluster_group cluster = cg::this_cluster();
  const int split = static_cast<int>(cluster.block_rank());
  const int h = blockIdx.x;
  cluster_arrive();
  pdl_trigger();
  if (kCounters) {
    if (threadIdx.x == 0) {
      unsigned v = 0;
      do {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
                     : "=r"(v)
                     : "l"(counters + h)
                     : "memory");
      } while (v < kBlocksPerHead);
    }
    __syncthreads();
  } else {
    pdl_wait();
  }
  const int64_t S = pos + 1;
  const int active = active_splits(S);
  const int64_t per = (S + active - 1) / active;
  const int64_t j0 = split < active ? split * per : S, j1 = split < active ? min(S, j0 + per) : S;
  const BlockPartial p = decode_block<kG, kWarps>(a, h, j0, j1);
  __shared__ float part_m[kSplits], part_l[kSplits];
  __shared__ float4 part_o[kSplits][kG];
  cluster_wait_all();
  if (split < active && threadIdx.x < kG) {
    if (threadIdx.x == 0) {
      cluster.map_shared_rank(part_m, 0)[split] = p.m;
      cluster.map_shared_rank(part_l, 0)[split] = p.l;
    }
    cluster.map_shared_rank(&part_o[0][0], 0)[split * kG + threadIdx.x] = p.o;
  }
  cluster.sync();
  if (split != 0) return;
  if (kCounters && threadIdx.x == 0) counters[h] = 0;  // every block of the head is past its wait
  if (threadIdx.x < kG)
    merge_and_store(a, h, active, [&](int sp) {
      return BlockPartial{part_m[sp], part_l[sp], part_o[sp][threadIdx.x]};
    });
}

// o_proj + residual: y[n] = x . w[n] + y[n], one warp a column.
__global__ void __launch_bounds__(256) o_kernel(const bf16* w, const float* x, float* y) {
  const int col = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
  const float acc = column(w, col, x);
  // Keeps the residual stream bounded over 12 layers: y <- 0.5 * (y + tanh(acc)).
  if (lane == 0) y[col] = 0.5f * (y[col] + tanhf(acc));
}

Operand op4(float* p, int64_t d1, int64_t d2, int64_t s1, int64_t s2) {
  Operand o;
  o.data = reinterpret_cast<char*>(p);
  o.ndim = 4;
  o.dtype = inplace::DType::kFloat32;
  const int64_t size[4] = {1, d1, d2, kE}, stride[4] = {d1 * s1, s1, s2, 1};
  for (int i = 0; i < 4; ++i) o.size[i] = size[i], o.stride[i] = stride[i];
  return o;
}

}  // namespace

int main() {
  using namespace probe;
  Buffers b;
  std::vector<Layer> layers;
  float* kv_all;
  const size_t cache = static_cast<size_t>(kKvHeads) * kSMax * kE;
  CK(cudaMalloc(&kv_all, 2 * kLayers * cache * 4));
  std::vector<float> init(2 * kLayers * cache);
  for (size_t i = 0; i < init.size(); ++i)
    init[i] = std::sin(0.001f * static_cast<float>(i % 9973));
  CK(cudaMemcpy(kv_all, init.data(), init.size() * 4, cudaMemcpyHostToDevice));
  for (int l = 0; l < kLayers; ++l)
    layers.push_back({b.weight(static_cast<size_t>(kQkvCols) * 1024), b.weight(1024 * 1024),
                      kv_all + (2 * l) * cache, kv_all + (2 * l + 1) * cache});
  float *x, *attn;
  CK(cudaMalloc(&x, 1024 * 4));
  CK(cudaMalloc(&attn, 1024 * 4));
  std::vector<float> ones(1024);
  for (int i = 0; i < 1024; ++i) ones[i] = 0.01f * static_cast<float>(i % 17);
  unsigned* counters;
  CK(cudaMalloc(&counters, kHeads * 4));
  CK(cudaMemset(counters, 0, kHeads * 4));
  for (auto k : {attention_kernel<false>, attention_kernel<true>})
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));

  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  const dim3 cluster(1, kSplits, 1);
  auto step = [&](bool counted, int pos) {
    for (const Layer& l : layers) {
      Attention a;
      a.q = op4(b.qkv, kHeads, 1, kE, kE);
      a.k = op4(l.kc, kKvHeads, kSMax, static_cast<int64_t>(kSMax) * kE, kE);
      a.v = op4(l.vc, kKvHeads, kSMax, static_cast<int64_t>(kSMax) * kE, kE);
      a.out = op4(attn, kHeads, 1, kE, kE);
      a.scale = 1.0 / std::sqrt(static_cast<double>(kE));
      if (counted) {
        launch(qkv_kernel<true>, kQkvCols / 8, 256, 0, nullptr, true, s, l, x, b.qkv, pos,
               counters);
        launch(attention_kernel<true>, dim3(kHeads, kSplits), 32 * kWarps, 0, &cluster, true, s, a,
               pos, counters);
      } else {
        launch(qkv_kernel<false>, kQkvCols / 8, 256, 0, nullptr, true, s, l, x, b.qkv, pos,
               counters);
        launch(attention_kernel<false>, dim3(kHeads, kSplits), 32 * kWarps, 0, &cluster, true, s, a,
               pos, counters);
      }
      launch(o_kernel, 1024 / 8, 256, 0, nullptr, true, s, l.wo, attn, x);
    }
  };
  auto capture = [&](bool counted, int pos) {
    cudaGraph_t g;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    step(counted, pos);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&exec, g, 0));
    CK(cudaGraphDestroy(g));
    return exec;
  };
  // The check: one step each way from the same x; the last layer's attention and x must match.
  std::vector<float> got[2][2];
  for (int counted = 0; counted < 2; ++counted) {
    CK(cudaMemcpy(x, ones.data(), 1024 * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(kv_all, init.data(), init.size() * 4, cudaMemcpyHostToDevice));
    cudaGraphExec_t exec = capture(counted, 200);
    CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));
    got[counted][0].resize(1024);
    got[counted][1].resize(1024);
    CK(cudaMemcpy(got[counted][0].data(), attn, 1024 * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(got[counted][1].data(), x, 1024 * 4, cudaMemcpyDeviceToHost));
    CK(cudaGraphExecDestroy(exec));
  }
  int diff = 0;
  for (int t = 0; t < 2; ++t)
    for (int i = 0; i < 1024; ++i)
      diff += got[0][t][i] != got[1][t][i] || !std::isfinite(got[0][t][i]);
  printf(
      "check: counters against the grid wait, one step at position 200: %d of 2048 values "
      "differ%s\n",
      diff, diff ? " FAILED" : "");
  for (int pos : {200, 3000})
    for (int counted = 0; counted < 2; ++counted) {
      cudaGraphExec_t exec = capture(counted, pos);
      const double us = step_us(
          s, [&] { CK(cudaGraphLaunch(exec, s)); }, 500);
      printf(
          "position %4d, attention after %-8s: %6.1f us a step (12 x q/k/v, attention, o_proj)\n",
          pos, counted ? "counters" : "the grid", us);
      CK(cudaGraphExecDestroy(exec));
    }
  return 0;
}
