// A standalone probe of a one-kernel decode step whose weights stream without waiting for the
// barriers (docs/performance-history.md, "Fewer links: what the measurements say"). It times
// issue 11's GEMV chain (12 layers x {q/k/v + norm, o_proj + residual, gate/up + norm + silu*mul,
// down_proj + residual}, then the LM head + norm; bf16 weights, one input row, 304 MB; no
// attention) as ONE cooperative kernel of one block an SM. Each block has:
//   - a loader warp (one thread) that bulk-copies the block's weight rows of every product, in
//     order, into a ring of `stages` 24 KB stages in shared memory (cp.async.bulk, one mbarrier
//     a stage for full and one for empty). Weights are constants, so the loader runs ahead of the
//     grid barriers, as far as the ring allows (8 stages: about a layer's rows for the block);
//   - 16 consumer warps that, for each product, wait at the grid barrier, stage x in shared
//     memory (with the norm's sum of squares), then take the product's stages as they fill
//     (a warp a row), release each stage to the loader, and arrive at the barrier.
// A block computes a contiguous range of each product's rows, so a stage is one copy (two for
// SwiGLU's pair of weights). Against persistent_chain_probe.cu's register-staged kernel
// (219.6 us on the H200), the PDL launch chain (208 us) and the HBM floor (69.8 us), it answers
// how close a step whose weight stream never stops can come to the floor.
// Built by -DINPLACE_BUILD_PROBES=ON (bench/probes/README.md), or alone, on an sm_90 GPU:
//   nvcc -O3 -std=c++20 --expt-relaxed-constexpr -arch=sm_90a -Isrc -Iinclude \
//     bench/probes/streaming_chain_probe.cu -o streaming_chain_probe && ./streaming_chain_probe
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/cuda/gemv_device.cuh"
#include "probe_common.cuh"

namespace {

using inplace::cuda::gemv::dot8;
using inplace::cuda::gemv::widen8;
using probe::bf16;

constexpr int kConsumers = 16;                   // consumer warps a block
constexpr int kThreads = 32 * (kConsumers + 1);  // and the loader warp
constexpr int kStageBytes = 24 * 1024;           // a ring stage
constexpr int kMaxStages = 8;
constexpr int kMaxK = 2816;

struct Task {
  const bf16* w;
  const bf16* w2;  // SwiGLU's second weight, or null
  const float* x;
  const float* normw;  // or null
  const float* res;    // or null
  float* y;
  int n, k;
};

__device__ inline uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ inline void mbar_init(uint64_t* b, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(b)), "r"(count)
               : "memory");
}
__device__ inline void mbar_expect_tx(uint64_t* b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(b)),
               "r"(bytes)
               : "memory");
}
__device__ inline void mbar_arrive(uint64_t* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(b)) : "memory");
}
__device__ inline void mbar_wait(uint64_t* b, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT_%=;\n"
      "}\n" ::"r"(smem_addr(b)),
      "r"(parity)
      : "memory");
}
__device__ inline void bulk_copy(void* dst, const void* src, unsigned bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}
// The consumer warps' own barrier (the loader warp never joins it).
__device__ inline void consumers_sync() {
  asm volatile("bar.sync 1, %0;" ::"n"(32 * kConsumers) : "memory");
}

// Block b's rows of a product: [r0, r1).
__device__ inline void rows_of(const Task& t, int* r0, int* r1) {
  *r0 = static_cast<int>(static_cast<int64_t>(t.n) * blockIdx.x / gridDim.x);
  *r1 = static_cast<int>(static_cast<int64_t>(t.n) * (blockIdx.x + 1) / gridDim.x);
}
__device__ inline int rows_per_stage(const Task& t) {
  return kStageBytes / (t.k * 2 * (t.w2 ? 2 : 1));
}

// kCompute false: the loader and the barriers only (what the chain costs without products).
template <bool kCompute>
__global__ void __launch_bounds__(kThreads, 1)
    chain(const Task* tasks, int nt, unsigned* barrier, int stages) {
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* ring = smem;
  float* xs = reinterpret_cast<float*>(smem + stages * kStageBytes);
  uint64_t* full = reinterpret_cast<uint64_t*>(xs + kMaxK);
  uint64_t* empty = full + kMaxStages;
  __shared__ float part[kConsumers];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], kConsumers);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (warp == kConsumers) {  // the loader
    if (lane != 0) return;
    int s = 0;
    unsigned phase = 0;
    for (int i = 0; i < nt; ++i) {
      const Task t = tasks[i];
      int r0, r1;
      rows_of(t, &r0, &r1);
      const int rps = rows_per_stage(t);
      for (int r = r0; r < r1; r += rps) {
        const unsigned bytes = static_cast<unsigned>(min(rps, r1 - r) * t.k * 2);
        mbar_wait(&empty[s], phase ^ 1);
        mbar_expect_tx(&full[s], bytes * (t.w2 ? 2 : 1));
        bulk_copy(ring + s * kStageBytes, t.w + static_cast<size_t>(r) * t.k, bytes, &full[s]);
        if (t.w2)
          bulk_copy(ring + s * kStageBytes + bytes, t.w2 + static_cast<size_t>(r) * t.k, bytes,
                    &full[s]);
        if (++s == stages) s = 0, phase ^= 1;
      }
    }
    return;
  }
  int s = 0;
  unsigned phase = 0;
  for (int i = 0; i < nt; ++i) {
    const Task t = tasks[i];
    if (i > 0) {  // the grid barrier: every block's results of the products before
      if (threadIdx.x == 0) {
        const unsigned target = static_cast<unsigned>(i) * gridDim.x;
        unsigned v = 0;
        do {
          asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(barrier) : "memory");
        } while (v < target);
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
      }
      consumers_sync();
    }
    float inv = 1.f;
    if (kCompute) {  // x (times the norm weight) into shared memory, and its sum of squares
      float sq = 0.f;
      for (int k = threadIdx.x * 4; k < t.k; k += 32 * kConsumers * 4) {
        float4 v = __ldcg(reinterpret_cast<const float4*>(t.x + k));
        sq += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
        if (t.normw) {
          const float4 g = __ldcg(reinterpret_cast<const float4*>(t.normw + k));
          v = make_float4(v.x * g.x, v.y * g.y, v.z * g.z, v.w * g.w);
        }
        *reinterpret_cast<float4*>(xs + k) = v;
      }
      for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(~0u, sq, o);
      if (lane == 0) part[warp] = sq;
      consumers_sync();
      if (t.normw) {
        float total = 0.f;
        for (int w = 0; w < kConsumers; ++w) total += part[w];
        inv = rsqrtf(total / t.k + 1e-6f);
      }
    }
    int r0, r1;
    rows_of(t, &r0, &r1);
    const int rps = rows_per_stage(t);
    for (int r = r0; r < r1; r += rps) {
      const int nr = min(rps, r1 - r);
      mbar_wait(&full[s], phase);
      if (kCompute) {
        const bf16* ws = reinterpret_cast<const bf16*>(ring + s * kStageBytes);
        for (int j = warp; j < nr; j += kConsumers) {
          float acc = 0.f, acc2 = 0.f;
          for (int k = lane * 8; k < t.k; k += 256) {
            const float4 a = *reinterpret_cast<const float4*>(xs + k);
            const float4 b = *reinterpret_cast<const float4*>(xs + k + 4);
            float wf[8];
            widen8(*reinterpret_cast<const uint4*>(ws + j * t.k + k), wf);
            acc += dot8(a, b, wf);
            if (t.w2) {
              widen8(*reinterpret_cast<const uint4*>(ws + (nr + j) * t.k + k), wf);
              acc2 += dot8(a, b, wf);
            }
          }
          for (int o = 16; o > 0; o >>= 1) {
            acc += __shfl_xor_sync(~0u, acc, o);
            acc2 += __shfl_xor_sync(~0u, acc2, o);
          }
          if (lane == 0) {
            float v = acc * inv;
            if (t.res) v += t.res[r + j];
            if (t.w2) v = v / (1.f + expf(-v)) * (acc2 * inv);
            t.y[r + j] = v;
          }
        }
      }
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[s]);
      if (++s == stages) s = 0, phase ^= 1;
    }
    consumers_sync();  // every warp's results, then one release add for the block
    if (threadIdx.x == 0)
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(barrier) : "memory");
  }
}

__global__ void reset(unsigned* barrier) {
  *barrier = 0;
}

}  // namespace

int main() {
  using namespace probe;
  const int D = kD, V = kV;
  Buffers b;
  float *h = b.h, *logits = b.logits, *normw = b.normw;
  std::vector<Task> tasks;
  model_chain(b, [&](const bf16* w, const bf16* w2, const float* x, const float* nw,
                     const float* res, float* y, int n, int k, int) {
    tasks.push_back({w, w2, x, nw, res, y, n, k});
  });
  Task* dev_tasks = upload(tasks);
  unsigned* barrier;
  CK(cudaMalloc(&barrier, 128));
  CK(cudaMemset(barrier, 0, 128));

  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  report_floor(b, s, tasks.size());

  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  using Kernel = void (*)(const Task*, int, unsigned*, int);
  const struct {
    const char* name;
    Kernel k;
  } modes[] = {{"loader + barriers only", chain<false>}, {"products", chain<true>}};
  const int nt = static_cast<int>(tasks.size());
  for (const auto& m : modes)
    for (int stages : {2, 4, 8}) {
      const int smem = stages * kStageBytes + kMaxK * 4 + 2 * kMaxStages * 8;
      CK(cudaFuncSetAttribute(m.k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      int per_sm = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, m.k, kThreads, smem));
      cudaFuncAttributes attr;
      CK(cudaFuncGetAttributes(&attr, m.k));
      if (per_sm < 1) {
        printf("%-24s %d stages: does not fit an SM\n", m.name, stages);
        continue;
      }
      if (m.k == chain<true>) {
        // A check first: the LM head alone (11 or 12 stages a block, so the ring wraps) over
        // x = 1 with a norm weight of 1: every logit is k * w * rsqrt(1 + eps).
        std::vector<float> ones(kMaxK, 1.f), got(V);
        CK(cudaMemcpy(h, ones.data(), D * 4, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(normw, ones.data(), D * 4, cudaMemcpyHostToDevice));
        CK(cudaMemset(logits, 0, V * 4));
        const Task* head = dev_tasks + (nt - 1);
        int one = 1;
        void* check_args[] = {(void*)&head, (void*)&one, (void*)&barrier, (void*)&stages};
        reset<<<1, 1, 0, s>>>(barrier);
        CK(cudaLaunchCooperativeKernel((void*)m.k, sms, kThreads, check_args, smem, s));
        CK(cudaMemcpyAsync(got.data(), logits, V * 4, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        const float want = D * __bfloat162float(__ushort_as_bfloat16(0x3c3c)) / sqrtf(1.f + 1e-6f);
        int bad = 0;
        for (int j = 0; j < V; ++j) bad += fabsf(got[j] - want) > 1e-3f * want;
        printf("check (LM head alone, %d stages): %d of %d logits off %.4f%s\n", stages, bad, V,
               want, bad ? " FAILED" : "");
      }
      void* args[] = {(void*)&dev_tasks, (void*)&nt, (void*)&barrier, (void*)&stages};
      auto run = [&] {
        reset<<<1, 1, 0, s>>>(barrier);
        CK(cudaLaunchCooperativeKernel((void*)m.k, sms, kThreads, args, smem, s));
      };
      const double us = step_us(s, run);
      printf(
          "%-24s %d stages of 24 KB: %7.1f us a step (%d blocks of %d threads, %d registers, "
          "%d spilled bytes)\n",
          m.name, stages, us, sms, kThreads, attr.numRegs, static_cast<int>(attr.localSizeBytes));
    }
  CK(cudaDeviceSynchronize());
  return 0;
}
