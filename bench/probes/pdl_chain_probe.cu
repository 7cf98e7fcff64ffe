// A standalone probe of what bounds a decode step made of one launch per product on a GPU
// (docs/performance-history.md, "What a launch-per-product step is made of"). It replays, in a CUDA
// graph, the GEMV chain of issue 11's model (12 layers x {q/k/v + norm, o_proj + residual,
// gate/up + norm + silu*mul, down_proj + residual}, then the LM head + norm; bf16 weights, one
// input row, 304 MB) and times it against the HBM read bandwidth measured in the same run:
//   null  kernels that only wait for their predecessor (the cost of a link in the chain);
//   A     the engine's scheme: one warp a column, its weight chunks fetched into registers
//         before the wait for the previous kernel (programmatic dependent launch);
//   B     the block's weight rows bulk-copied into shared memory (cp.async.bulk + mbarrier)
//         before the wait, then the product from shared memory;
// each with programmatic dependent launches on and off, A also without its norms and with a bulk
// L2 prefetch of the weights of the product two ahead. `--timeline` prints, for A over three
// layers, when each kernel's first block started, when its last block's wait returned and when
// its last block ended (%globaltimer). Built by -DINPLACE_BUILD_PROBES=ON (bench/probes/README.md),
// or alone, on an sm_90 GPU:
//   nvcc -O3 -std=c++20 --expt-relaxed-constexpr -arch=sm_90a -Isrc -Iinclude \
//     bench/probes/pdl_chain_probe.cu -o pdl_chain_probe && ./pdl_chain_probe
#include "kernels/cuda/gemv_device.cuh"
#include "probe_common.cuh"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using probe::bf16;
__device__ inline void trig() {
  asm volatile("griddepcontrol.launch_dependents;");
}
__device__ inline void waitp() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

struct G {
  const bf16* w;
  const bf16* w2;
  const float* x;
  const float* normw;
  const float* res;
  float* y;
  int n, k;
  unsigned long long* ts;
  int id;
  const char* pf[2];
  unsigned long long pf_bytes[2];
};
// This block's share of the bulk L2 prefetch of a later kernel's weights.
__device__ inline void prefetch_share(const G& g) {
  if (threadIdx.x != 0) return;
  for (int i = 0; i < 2; ++i) {
    if (!g.pf[i]) continue;
    unsigned long long chunk = (g.pf_bytes[i] / gridDim.x + 4095) / 4096 * 4096;
    unsigned long long b0 = blockIdx.x * chunk;
    if (b0 >= g.pf_bytes[i]) continue;
    unsigned long long n = min(chunk, g.pf_bytes[i] - b0);
    while (n > 0) {
      unsigned int part = n > (1u << 20) ? (1u << 20) : (unsigned)n;
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(g.pf[i] + b0), "r"(part)
                   : "memory");
      b0 += part;
      n -= part;
    }
  }
}
__device__ inline unsigned long long gt() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}
#define STAMP(slot, op) \
  if (g.ts && threadIdx.x == 0) op(g.ts + g.id * 4 + slot, gt())

using inplace::cuda::gemv::widen8;  // the engine's bf16 -> float widening
__device__ inline float dot8(const float* x, const float* wf) {
  float4 a = reinterpret_cast<const float4*>(x)[0], b = reinterpret_cast<const float4*>(x)[1];
  return a.x * wf[0] + a.y * wf[1] + a.z * wf[2] + a.w * wf[3] + b.x * wf[4] + b.y * wf[5] +
         b.z * wf[6] + b.w * wf[7];
}
__device__ inline float block_inv(const G& g) {
  __shared__ float part[8];
  float sq = 0;
  for (int k = threadIdx.x * 4; k < g.k; k += blockDim.x * 4) {
    float4 v = *reinterpret_cast<const float4*>(g.x + k);
    sq += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
  }
  for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(~0u, sq, o);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = sq;
  __syncthreads();
  float t = 0;
  for (int w = 0; w < 8; ++w) t += part[w];
  return rsqrtf(t / g.k + 1e-6f);
}
__device__ inline float finish(const G& g, int n, float v, float v2, bool two) {
  for (int o = 16; o > 0; o >>= 1) {
    v += __shfl_xor_sync(~0u, v, o);
    v2 += __shfl_xor_sync(~0u, v2, o);
  }
  if (g.res) v += g.res[n];
  if (two) v = v / (1.f + expf(-v)) * v2;
  return v;
}

// A: one warp a row, first 4 x 16 B a lane fetched before the wait.
template <bool kTwo>
__global__ void __launch_bounds__(256, 4) gemv_a(G g) {
  STAMP(0, atomicMin);
  trig();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int n = blockIdx.x * 8 + warp;
  const bool active = n < g.n;
  const int K = g.k;
  const bf16* wr = g.w + (size_t)n * K;
  const bf16* wr2 = kTwo ? g.w2 + (size_t)n * K : nullptr;
  uint4 raw[4], raw2[4];
  auto fetch = [&](int k0) {
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      int k = k0 + 256 * u;
      if (k < K) {
        raw[u] = __ldcs(reinterpret_cast<const uint4*>(wr + k));
        if (kTwo) raw2[u] = __ldcs(reinterpret_cast<const uint4*>(wr2 + k));
      }
    }
  };
  if (active) fetch(lane * 8);
  prefetch_share(g);
  waitp();
  STAMP(1, atomicMax);
  float inv = g.normw ? block_inv(g) : 1.f;
  STAMP(2, atomicMax);
  if (!active) return;
  float acc = 0, acc2 = 0;
  for (int k0 = lane * 8; k0 < K; k0 += 1024) {
    if (k0 != lane * 8) fetch(k0);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      int k = k0 + 256 * u;
      if (k >= K) break;
      float xs[8];
      {
        float4 a = *reinterpret_cast<const float4*>(g.x + k),
               b = *reinterpret_cast<const float4*>(g.x + k + 4);
        if (g.normw) {
          float4 ga = *reinterpret_cast<const float4*>(g.normw + k),
                 gb = *reinterpret_cast<const float4*>(g.normw + k + 4);
          a = make_float4(a.x * inv * ga.x, a.y * inv * ga.y, a.z * inv * ga.z, a.w * inv * ga.w);
          b = make_float4(b.x * inv * gb.x, b.y * inv * gb.y, b.z * inv * gb.z, b.w * inv * gb.w);
        }
        xs[0] = a.x;
        xs[1] = a.y;
        xs[2] = a.z;
        xs[3] = a.w;
        xs[4] = b.x;
        xs[5] = b.y;
        xs[6] = b.z;
        xs[7] = b.w;
      }
      float wf[8];
      widen8(raw[u], wf);
      acc += dot8(xs, wf);
      if (kTwo) {
        widen8(raw2[u], wf);
        acc2 += dot8(xs, wf);
      }
    }
  }
  float v = finish(g, n, acc, acc2, kTwo);
  if (lane == 0) g.y[n] = v;
  if (g.ts && lane == 0) atomicMax(g.ts + g.id * 4 + 3, gt());
}

__device__ inline uint32_t sa(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// B: the block's rows bulk-copied to shared memory before the wait; kRpw rows a warp.
template <bool kTwo, int kRpw>
__global__ void __launch_bounds__(256) gemv_b(G g) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) uint64_t bar;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int K = g.k;
  const int rows_block = 8 * kRpw, n0 = blockIdx.x * rows_block;
  const int nrows = min(rows_block, g.n - n0);
  const uint32_t bytes = nrows * K * 2;
  STAMP(0, atomicMin);
  bf16* sw = reinterpret_cast<bf16*>(smem);
  bf16* sw2 = sw + rows_block * K;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(sa(&bar)));
    asm volatile("fence.mbarrier_init.release.cluster;");
    asm volatile("fence.proxy.async.shared::cta;");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sa(&bar)),
                 "r"(bytes * (kTwo ? 2 : 1))
                 : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
        "[%3];" ::"r"(sa(sw)),
        "l"(g.w + (size_t)n0 * K), "r"(bytes), "r"(sa(&bar))
        : "memory");
    if (kTwo)
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
          "[%3];" ::"r"(sa(sw2)),
          "l"(g.w2 + (size_t)n0 * K), "r"(bytes), "r"(sa(&bar))
          : "memory");
  }
  trig();
  prefetch_share(g);
  __syncthreads();
  waitp();
  STAMP(1, atomicMax);
  float inv = g.normw ? block_inv(g) : 1.f;
  // x normalised into shared memory once per block.
  __shared__ __align__(16) float xs[4096];
  for (int k = threadIdx.x; k < K; k += 256) xs[k] = g.x[k] * (g.normw ? inv * g.normw[k] : 1.f);
  __syncthreads();
  uint32_t done = 0;
  while (!done)
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, "
        "p; }"
        : "=r"(done)
        : "r"(sa(&bar))
        : "memory");
  STAMP(2, atomicMax);
#pragma unroll
  for (int r = 0; r < kRpw; ++r) {
    const int row = warp * kRpw + r;
    if (row >= nrows) break;
    const bf16* wr = sw + row * K;
    const bf16* wr2 = sw2 + row * K;
    float acc = 0, acc2 = 0;
    for (int k = lane * 8; k < K; k += 256) {
      float wf[8];
      widen8(*reinterpret_cast<const uint4*>(wr + k), wf);
      acc += dot8(xs + k, wf);
      if (kTwo) {
        widen8(*reinterpret_cast<const uint4*>(wr2 + k), wf);
        acc2 += dot8(xs + k, wf);
      }
    }
    float v = finish(g, n0 + row, acc, acc2, kTwo);
    if (lane == 0) g.y[n0 + row] = v;
  }
  __syncthreads();
  STAMP(3, atomicMax);
}

__global__ void __launch_bounds__(256) null_k(G g) {
  trig();
  waitp();
  if (threadIdx.x == 0 && blockIdx.x == 0) g.y[0] = g.x[0] + 1;
}

template <typename... P>
void launch(void (*k)(P...), int grid, int smem, cudaStream_t s, bool pdl, G g) {
  probe::launch(k, grid, 256, smem, nullptr, pdl, s, g);
}

struct Layer {
  bf16 *qkv, *o, *gate, *up, *down;
};

int main(int argc, char** argv) {
  using namespace probe;
  const int D = kD, F = kF, V = kV, NQKV = kQkv;
  Buffers b;
  std::vector<Layer> layers(kLayers);
  for (auto& l : layers) {
    l.qkv = b.weight((size_t)NQKV * D);
    l.o = b.weight((size_t)D * D);
    l.gate = b.weight((size_t)F * D);
    l.up = b.weight((size_t)F * D);
    l.down = b.weight((size_t)D * F);
  }
  bf16* head = b.weight((size_t)V * D);
  float *h = b.h, *qkv = b.qkv, *act = b.act, *logits = b.logits, *normw = b.normw;
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  report_floor(b, s);

  CK(cudaFuncSetAttribute(gemv_b<false, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          200 * 1024));
  CK(cudaFuncSetAttribute(gemv_b<true, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          200 * 1024));

  struct Op {
    G g;
    bool two;
  };
  std::vector<Op> ops;
  for (auto& l : layers) {
    ops.push_back({{l.qkv, nullptr, h, normw, nullptr, qkv, NQKV, D}, false});
    ops.push_back({{l.o, nullptr, qkv, nullptr, h, h, D, D}, false});
    ops.push_back({{l.gate, l.up, h, normw, nullptr, act, F, D}, true});
    ops.push_back({{l.down, nullptr, act, nullptr, h, h, D, F}, false});
  }
  ops.push_back({{head, nullptr, h, normw, nullptr, logits, V, D}, false});
  int strip = 0;  // 1: no norm, 2: no residual, 3: neither
  auto step = [&](int variant, bool pdl, int dist) {
    for (size_t i = 0; i < ops.size(); ++i) {
      G g = ops[i].g;
      if (strip & 1) g.normw = nullptr;
      if (strip & 2) g.res = nullptr;
      bool two = ops[i].two;
      // The weights of the product `dist` ahead, prefetched into L2 by this one's blocks.
      if (dist > 0 && i + dist < ops.size()) {
        const Op& t = ops[i + dist];
        g.pf[0] = reinterpret_cast<const char*>(t.g.w);
        g.pf_bytes[0] = (unsigned long long)t.g.n * t.g.k * 2;
        if (t.two) {
          g.pf[1] = reinterpret_cast<const char*>(t.g.w2);
          g.pf_bytes[1] = g.pf_bytes[0];
        }
      }
      if (variant == 3) {
        launch(null_k, 132, 0, s, pdl, g);
        continue;
      }
      if (variant == 0) {
        int grid = (g.n + 7) / 8;
        if (two)
          launch(gemv_a<true>, grid, 0, s, pdl, g);
        else
          launch(gemv_a<false>, grid, 0, s, pdl, g);
        continue;
      }
      int rb = 8, grid = (g.n + rb - 1) / rb, smem = rb * g.k * 2 * (two ? 2 : 1);
      if (two)
        launch(gemv_b<true, 1>, grid, smem, s, pdl, g);
      else
        launch(gemv_b<false, 1>, grid, smem, s, pdl, g);
    }
  };
  struct Config {
    const char* name;
    int variant;  // 0 = A, 1 = B, 3 = null
    bool pdl;
    int strip;  // 1: no norms
    int dist;   // L2 prefetch of the product this many ahead (0: none)
  };
  const Config configs[] = {
      {"null chain", 3, true, 0, 0},        {"null chain", 3, false, 0, 0},
      {"A (registers)", 0, true, 0, 0},     {"A (registers)", 0, false, 0, 0},
      {"A, no norms", 0, true, 1, 0},       {"A, L2 prefetch 2 ahead", 0, true, 0, 2},
      {"B (shared memory)", 1, true, 0, 0}, {"B (shared memory)", 1, false, 0, 0},
  };
  for (const Config& c : configs) {
    strip = c.strip;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    step(c.variant, c.pdl, c.dist);
    CK(cudaStreamEndCapture(s, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    const double us = step_us(s, [&] { CK(cudaGraphLaunch(exec, s)); });
    printf("%-24s pdl %s: %7.1f us a step (%zu launches)\n", c.name, c.pdl ? "on " : "off", us,
           ops.size());
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
  }
  CK(cudaDeviceSynchronize());
  if (argc < 2 || std::string(argv[1]) != "--timeline") return 0;
  unsigned long long* ts;
  CK(cudaMalloc(&ts, 64 * 4 * 8));
  for (int pdl = 1; pdl >= 0; --pdl) {
    int id = 0;
    auto one = [&](G g, bool two) {
      g.ts = ts;
      g.id = id++;
      if (two)
        launch(gemv_a<true>, (g.n + 7) / 8, 0, s, pdl, g);
      else
        launch(gemv_a<false>, (g.n + 7) / 8, 0, s, pdl, g);
    };
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int li = 0; li < 3; ++li) {
      auto& l = layers[li];
      one({l.qkv, nullptr, h, normw, nullptr, qkv, NQKV, D}, false);
      one({l.o, nullptr, qkv, nullptr, h, h, D, D}, false);
      one({l.gate, l.up, h, normw, nullptr, act, F, D}, true);
      one({l.down, nullptr, act, nullptr, h, h, D, F}, false);
    }
    CK(cudaStreamEndCapture(s, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    for (int rep = 0; rep < 3; ++rep) {
      std::vector<unsigned long long> host(64 * 4);
      for (int i = 0; i < 64; ++i) {
        host[i * 4] = ~0ull;
        host[i * 4 + 1] = host[i * 4 + 2] = host[i * 4 + 3] = 0;
      }
      CK(cudaMemcpy(ts, host.data(), host.size() * 8, cudaMemcpyHostToDevice));
      CK(cudaGraphLaunch(exec, s));
      CK(cudaStreamSynchronize(s));
      CK(cudaMemcpy(host.data(), ts, host.size() * 8, cudaMemcpyDeviceToHost));
      printf(
          "A, pdl %s, replay %d (us from the first start: first block started / last wait returned "
          "/ last norm done / last block ended)\n",
          pdl ? "on" : "off", rep);
      unsigned long long t0 = host[0];
      for (int i = 0; i < id; ++i)
        printf("  k%2d %7.2f %7.2f %7.2f %7.2f\n", i, (host[i * 4] - t0) / 1e3,
               (host[i * 4 + 1] - t0) / 1e3, (host[i * 4 + 2] - t0) / 1e3,
               (host[i * 4 + 3] - t0) / 1e3);
    }
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
