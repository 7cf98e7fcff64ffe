// A standalone probe of the one-kernel decode step's best case (docs/performance-history.md,
// "Fewer links: what the measurements say"): issue 11's GEMV chain (12 layers x {q/k/v + norm,
// o_proj + residual, gate/up + norm + silu*mul, down_proj + residual}, then the LM head + norm;
// bf16 weights, one input row, 304 MB; no attention) as ONE cooperative kernel, one block of 16
// warps an SM, a grid barrier between products, against the HBM read bandwidth measured in the
// same run:
//   barrier   the tasks do nothing: what the chain of 49 grid barriers costs alone;
//   staged    a warp holds its rows of the next product in registers (up to 16 16-byte chunks a
//             lane: four 1024-long rows, two SwiGLU row pairs, one 2816-long row) and issues
//             their loads BEFORE it waits at the barrier, so the weights are on chip when the
//             barrier opens (the LM head, 8 rows a warp, loads its second half after);
//   unstaged  the same kernel issuing the loads after the barrier;
// each with the grid barrier on one counter, and (barriers only, staged) on eight counters that
// the blocks arrive at in turn and warp 0 polls together (less contention on one address).
// The engine's persistent kernel (2 blocks of 8 warps an SM, one warp a column, a virtual block
// at a time) fetches only a block's first 16 KB before a barrier; `staged` is what that kernel
// would gain with every row of a product in flight across the barrier. The per-product chain
// after the barrier is the engine's: x (and the norm weight) read from L2, the norm's sum of
// squares taken in the product's pass, a warp reduction, the epilogue.
// Built by -DINPLACE_BUILD_PROBES=ON (bench/probes/README.md), or alone, on an sm_90 GPU:
//   nvcc -O3 -std=c++20 --expt-relaxed-constexpr -arch=sm_90a -Isrc -Iinclude \
//     bench/probes/persistent_chain_probe.cu -o persistent_chain_probe && ./persistent_chain_probe
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include "kernels/cuda/gemv_device.cuh"
#include "probe_common.cuh"

namespace {

using inplace::cuda::gemv::widen8;
using probe::bf16;

constexpr int kWarps = 16, kThreads = 32 * kWarps, kChunks = 16;

// One product: y[n] = (x . w[n]) (* rsqrt(mean(x^2) + eps) with normw) (+ res[n]), or SwiGLU's
// silu(x . w[n]) * (x . w2[n]).
struct Task {
  const bf16* w;
  const bf16* w2;
  const float* x;
  const float* normw;
  const float* res;
  float* y;
  int n, k, kind;  // kind: 0 K=1024, 1 K=1024 SwiGLU, 2 K=2816
};

// The grid barrier: kSplit counters (block b arrives at counter b % kSplit, 128 bytes apart, so
// arrivals are spread over kSplit addresses), counting up by one per block and task; task i
// starts once counter c has reached i x (the blocks mapped to it). Arrival: the block's writes,
// then one release add by thread 0.
template <int kSplit>
__device__ inline void arrive(unsigned* c) {
  __syncthreads();
  if (threadIdx.x == 0)
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(c + 32 * (blockIdx.x % kSplit))
                 : "memory");
}

// Lanes 0..kSplit-1 of warp 0 each poll one counter (relaxed), then one acquire fence.
template <int kSplit>
__device__ inline void wait_for(unsigned* c, unsigned i) {
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    const unsigned mapped = (gridDim.x - lane + kSplit - 1) / kSplit;  // blocks at counter lane
    const unsigned target = lane < kSplit ? i * mapped : 0;
    bool done = lane >= kSplit;
    while (!__all_sync(~0u, done)) {
      unsigned v = 0;
      if (!done) {
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];"
                     : "=r"(v)
                     : "l"(c + 32 * lane)
                     : "memory");
        done = v >= target;
      }
    }
    if (lane == 0) asm volatile("fence.acq_rel.gpu;" ::: "memory");
  }
  __syncthreads();
}

// A warp's rows of a product in rounds of R rows, each row CPR chunks a lane (x2 for SwiGLU):
// chunk j of a row is the 16 bytes at k = (j * 32 + lane) * 8.
template <int K, bool kTwo>
struct Shape {
  static constexpr int CPR = K / 256;
  static constexpr int PER_ROW = CPR * (kTwo ? 2 : 1);
  static constexpr int R = kChunks / PER_ROW > 0 ? kChunks / PER_ROW : 1;
};

template <int K, bool kTwo>
__device__ inline void load_round(const Task& t, uint4 (&buf)[kChunks], int round, int gw, int GW) {
  using S = Shape<K, kTwo>;
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < S::R; ++r) {
    const int row = gw + (round * S::R + r) * GW;
    if (row >= t.n) break;
#pragma unroll
    for (int j = 0; j < S::CPR; ++j) {
      const int k = (j * 32 + lane) * 8;
      buf[r * S::PER_ROW + j] = __ldcs(reinterpret_cast<const uint4*>(t.w + (size_t)row * K + k));
      if constexpr (kTwo)
        buf[r * S::PER_ROW + S::CPR + j] =
            __ldcs(reinterpret_cast<const uint4*>(t.w2 + (size_t)row * K + k));
    }
  }
}

template <int K, bool kTwo>
__device__ inline void compute_round(const Task& t, const uint4 (&buf)[kChunks], int round, int gw,
                                     int GW) {
  using S = Shape<K, kTwo>;
  const int lane = threadIdx.x % 32;
  float acc[S::R] = {}, acc2[S::R] = {}, sq = 0.f;
#pragma unroll
  for (int j = 0; j < S::CPR; ++j) {
    const int k = (j * 32 + lane) * 8;
    float4 a = *reinterpret_cast<const float4*>(t.x + k);
    float4 b = *reinterpret_cast<const float4*>(t.x + k + 4);
    if (t.normw) {
      sq += a.x * a.x + a.y * a.y + a.z * a.z + a.w * a.w + b.x * b.x + b.y * b.y + b.z * b.z +
            b.w * b.w;
      const float4 ga = *reinterpret_cast<const float4*>(t.normw + k);
      const float4 gb = *reinterpret_cast<const float4*>(t.normw + k + 4);
      a = make_float4(a.x * ga.x, a.y * ga.y, a.z * ga.z, a.w * ga.w);
      b = make_float4(b.x * gb.x, b.y * gb.y, b.z * gb.z, b.w * gb.w);
    }
#pragma unroll
    for (int r = 0; r < S::R; ++r) {
      float wf[8];
      widen8(buf[r * S::PER_ROW + j], wf);
      acc[r] += a.x * wf[0] + a.y * wf[1] + a.z * wf[2] + a.w * wf[3] + b.x * wf[4] + b.y * wf[5] +
                b.z * wf[6] + b.w * wf[7];
      if constexpr (kTwo) {
        widen8(buf[r * S::PER_ROW + S::CPR + j], wf);
        acc2[r] += a.x * wf[0] + a.y * wf[1] + a.z * wf[2] + a.w * wf[3] + b.x * wf[4] +
                   b.y * wf[5] + b.z * wf[6] + b.w * wf[7];
      }
    }
  }
  for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(~0u, sq, o);
  const float inv = t.normw ? rsqrtf(sq / K + 1e-6f) : 1.f;
#pragma unroll
  for (int r = 0; r < S::R; ++r) {
    float v = acc[r], v2 = acc2[r];
    for (int o = 16; o > 0; o >>= 1) {
      v += __shfl_xor_sync(~0u, v, o);
      if constexpr (kTwo) v2 += __shfl_xor_sync(~0u, v2, o);
    }
    const int row = gw + (round * S::R + r) * GW;
    if (row >= t.n || lane != 0) continue;
    v *= inv;
    if (t.res) v += t.res[row];
    if constexpr (kTwo) v = v / (1.f + expf(-v)) * (v2 * inv);
    t.y[row] = v;
  }
}

template <int K, bool kTwo>
__device__ inline int rounds(const Task& t, int gw, int GW) {
  using S = Shape<K, kTwo>;
  const int rows = gw < t.n ? (t.n - gw + GW - 1) / GW : 0;
  return (rows + S::R - 1) / S::R;
}

// kMode: 0 barriers only, 1 staged (round 0's loads before the barrier), 2 unstaged.
template <int kMode, int kSplit>
__global__ void __launch_bounds__(kThreads, 1) chain(const Task* tasks, int nt, unsigned* barrier) {
  const int gw = blockIdx.x * kWarps + threadIdx.x / 32, GW = gridDim.x * kWarps;
  uint4 buf[kChunks];
  // f(K, two) with the task's shape as compile-time constants (kind 0, 1 or 2).
  auto by_kind = [](const Task& t, auto&& f) {
    using std::integral_constant;
    if (t.kind == 0) return f(integral_constant<int, 1024>{}, std::false_type{});
    if (t.kind == 1) return f(integral_constant<int, 1024>{}, std::true_type{});
    return f(integral_constant<int, 2816>{}, std::false_type{});
  };
  auto issue = [&](const Task& t, int round) {
    by_kind(t, [&](auto K, auto two) { load_round<K(), two()>(t, buf, round, gw, GW); });
  };
  auto compute = [&](const Task& t, int round) {
    by_kind(t, [&](auto K, auto two) { compute_round<K(), two()>(t, buf, round, gw, GW); });
  };
  auto n_rounds = [&](const Task& t) {
    return by_kind(t, [&](auto K, auto two) { return rounds<K(), two()>(t, gw, GW); });
  };
  for (int i = 0; i < nt; ++i) {
    const Task t = tasks[i];
    const int nr = kMode == 0 ? 0 : n_rounds(t);
    if (kMode == 1 && nr > 0) issue(t, 0);
    if (i > 0) wait_for<kSplit>(barrier, static_cast<unsigned>(i));
    for (int r = 0; r < nr; ++r) {
      if (kMode == 2 || r > 0) issue(t, r);
      compute(t, r);
    }
    arrive<kSplit>(barrier);
  }
}

// Sets the barrier's counters back to zero between launches (stream-ordered).
__global__ void reset(unsigned* barrier) {
  if (threadIdx.x < 32) barrier[32 * threadIdx.x] = 0;
}

}  // namespace

int main() {
  using namespace probe;
  Buffers b;
  std::vector<Task> tasks;
  model_chain(b, [&](const bf16* w, const bf16* w2, const float* x, const float* nw,
                     const float* res, float* y, int n, int k, int kind) {
    tasks.push_back({w, w2, x, nw, res, y, n, k, kind});
  });
  Task* dev_tasks = upload(tasks);
  unsigned* barrier;
  CK(cudaMalloc(&barrier, 32 * 32 * 4));
  CK(cudaMemset(barrier, 0, 32 * 32 * 4));

  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  report_floor(b, s, tasks.size());

  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  using Kernel = void (*)(const Task*, int, unsigned*);
  const struct {
    const char* name;
    Kernel k;
  } modes[] = {{"barriers only, 1 counter", chain<0, 1>},
               {"barriers only, 8 counters", chain<0, 8>},
               {"staged, 1 counter", chain<1, 1>},
               {"staged, 8 counters", chain<1, 8>},
               {"unstaged, 1 counter", chain<2, 1>}};
  const int nt = static_cast<int>(tasks.size());
  for (const auto& m : modes) {
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, m.k, kThreads, 0));
    cudaFuncAttributes attr;
    CK(cudaFuncGetAttributes(&attr, m.k));
    if (per_sm < 1) {
      printf("%-26s does not fit an SM (%d registers)\n", m.name, attr.numRegs);
      continue;
    }
    void* args[] = {(void*)&dev_tasks, (void*)&nt, (void*)&barrier};
    // A reset launch before each step, in every variant ("barriers only" includes it).
    auto run = [&] {
      reset<<<1, 32, 0, s>>>(barrier);
      CK(cudaLaunchCooperativeKernel((void*)m.k, sms, kThreads, args, 0, s));
    };
    printf("%-26s %7.1f us a step (%d blocks of %d threads, %d registers, %d spilled bytes)\n",
           m.name, step_us(s, run), sms, kThreads, attr.numRegs,
           static_cast<int>(attr.localSizeBytes));
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
