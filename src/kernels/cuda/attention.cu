// Decode-oriented attention: each block owns one (batch, head, query row) and a chunk of the
// keys; its warps walk the keys with an online softmax (running max, sum and weighted values
// per warp, the head dim spread across lanes), then merge. Chunks of one row are merged by a
// second kernel, or on the decode fast path by the row's thread-block cluster, so a long cache
// is read by many blocks at once (split-K, flash-decoding).
#include <cooperative_groups.h>

#include <algorithm>
#include <cfloat>

#include "kernels/cuda/attention_device.cuh"

namespace inplace::cuda {

namespace {

using decode::active_splits;
using decode::BlockPartial;
using decode::decode_block;
using decode::decode_group;
using decode::first_key;
using decode::kDecodeWarps;
using decode::key_count;
using decode::kMaxClusterSplits;
using decode::kMinKeys;
using decode::merge_and_store;
using decode::off4;
using decode::store_row;

constexpr int kWarps = 4;
constexpr int kMaxPerLane = 8;  // head dims up to 256
constexpr int kChunk = 256;     // keys per block before the sequence is split

struct Partial {
  float* m;    // [rows, splits]
  float* l;    // [rows, splits]
  float* acc;  // [rows, splits, Ev]
};

__global__ void attention_kernel(Attention a, Partial part, int splits) {
  pdl_begin();
  const int64_t H = a.q.size[1], L = a.q.size[2], E = a.q.size[3];
  const int64_t S = key_count(a), Ev = a.v.size[3], Hk = a.k.size[1];
  const int64_t first = first_key(a, S);
  const int64_t row = blockIdx.x;  // (b, h, i)
  const int64_t i = row % L, h = (row / L) % H, b = row / (L * H);
  const int64_t hk = h / (H / Hk);
  const int split = blockIdx.y;
  const int64_t per = (S - first + splits - 1) / splits;
  const int64_t j0 = first + split * per, j1 = min(S, j0 + per);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  float q[kMaxPerLane], acc[kMaxPerLane];
  for (int t = 0; t < kMaxPerLane; ++t) {
    const int64_t d = lane + 32 * t;
    q[t] = d < E ? load_at<float>(a.q.data, a.q.dtype, off4(a.q, b, h, i, d)) : 0.f;
    acc[t] = 0.f;
  }
  float m = -FLT_MAX, l = 0.f;
  bool any = false;
  for (int64_t j = j0 + warp; j < j1; j += kWarps) {
    if (a.causal && j > i) break;
    float s = 0.f;
    for (int t = 0; t < kMaxPerLane; ++t) {
      const int64_t d = lane + 32 * t;
      if (d < E) s += q[t] * load_at<float>(a.k.data, a.k.dtype, off4(a.k, b, hk, j, d));
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    s *= static_cast<float>(a.scale);
    if (a.has_mask) {
      const int64_t mo = off4(a.mask, b, h, i, j);
      if (a.mask.dtype == DType::kBool) {
        if (!reinterpret_cast<const bool*>(a.mask.data)[mo]) continue;
      } else {
        s += load_at<float>(a.mask.data, a.mask.dtype, mo);
      }
    }
    if (s == -INFINITY) continue;
    any = true;
    const float m_new = fmaxf(m, s);
    const float correction = __expf(m - m_new), p = __expf(s - m_new);
    l = l * correction + p;
    for (int t = 0; t < kMaxPerLane; ++t) {
      const int64_t d = lane + 32 * t;
      acc[t] = acc[t] * correction +
               (d < Ev ? p * load_at<float>(a.v.data, a.v.dtype, off4(a.v, b, hk, j, d)) : 0.f);
    }
    m = m_new;
  }
  if (!any) m = -FLT_MAX;
  // Merge the warps of this block.
  __shared__ float sm[kWarps], sl[kWarps], sacc[kWarps][32 * kMaxPerLane];
  if (lane == 0) {
    sm[warp] = m;
    sl[warp] = l;
  }
  for (int t = 0; t < kMaxPerLane; ++t) sacc[warp][lane + 32 * t] = acc[t];
  __syncthreads();
  if (warp != 0) return;
  float M = -FLT_MAX;
  for (int w = 0; w < kWarps; ++w) M = fmaxf(M, sm[w]);
  float Lsum = 0.f;
  float out[kMaxPerLane] = {};
  for (int w = 0; w < kWarps; ++w) {
    if (sl[w] == 0.f) continue;
    const float c = __expf(sm[w] - M);
    Lsum += sl[w] * c;
    for (int t = 0; t < kMaxPerLane; ++t) out[t] += sacc[w][lane + 32 * t] * c;
  }
  if (splits > 1) {
    const int64_t slot = row * splits + split;
    if (lane == 0) {
      part.m[slot] = M;
      part.l[slot] = Lsum;
    }
    for (int t = 0; t < kMaxPerLane; ++t) {
      const int64_t d = lane + 32 * t;
      if (d < Ev) part.acc[slot * Ev + d] = out[t];
    }
    return;
  }
  for (int t = 0; t < kMaxPerLane; ++t) {
    const int64_t d = lane + 32 * t;
    if (d < Ev)
      store_at<float>(a.out.data, a.out.dtype, off4(a.out, b, h, i, d),
                      Lsum > 0.f ? out[t] / Lsum : 0.f);
  }
}

__global__ void merge_kernel(Attention a, Partial part, int splits) {
  pdl_begin();
  const int64_t H = a.q.size[1], L = a.q.size[2], Ev = a.v.size[3];
  const int64_t row = blockIdx.x;
  const int64_t i = row % L, h = (row / L) % H, b = row / (L * H);
  float M = -FLT_MAX;
  for (int s = 0; s < splits; ++s)
    if (part.l[row * splits + s] > 0.f) M = fmaxf(M, part.m[row * splits + s]);
  float Lsum = 0.f;
  for (int s = 0; s < splits; ++s) {
    const float l = part.l[row * splits + s];
    if (l > 0.f) Lsum += l * __expf(part.m[row * splits + s] - M);
  }
  for (int64_t d = threadIdx.x; d < Ev; d += blockDim.x) {
    float v = 0.f;
    for (int s = 0; s < splits; ++s) {
      const int64_t slot = row * splits + s;
      if (part.l[slot] > 0.f) v += part.acc[slot * Ev + d] * __expf(part.m[slot] - M);
    }
    store_at<float>(a.out.data, a.out.dtype, off4(a.out, b, h, i, d), Lsum > 0.f ? v / Lsum : 0.f);
  }
}

// Split `split` of `splits` over the keys attended, [first, S) of the S present: keys [j0, j1)
// (empty past the active ones).
struct SplitRange {
  int active;
  int64_t j0, j1;
};
__device__ inline SplitRange split_range(int64_t first, int64_t S, int min_keys, int splits,
                                         int split) {
  const int64_t n = S - first;
  const int active = active_splits(n, min_keys, splits);
  const int64_t per = div32(n + active - 1, active);  // S < 2^31 (decode_group)
  const int64_t j0 = split < active ? first + split * per : S,
                j1 = split < active ? min(S, j0 + per) : S;
  return {active, j0, j1};
}

// Before the wait for the previous kernel (the q/k/v product): L2 is asked for the keys and
// values this block will read, so that its loads after the wait find them on chip. The key count
// read here may be stale (a kernel before may still change it): it only sizes the hint, inside
// the cache. Done by the first query row of each kv head, where a head's keys are contiguous.
template <typename T>
__device__ inline void prefetch_split(const Attention& a, int64_t row, int min_keys, int splits,
                                      int split) {
  const int64_t H = a.q.size[1], L = a.q.size[2], Hk = a.k.size[1], E = a.k.size[3];
  const int64_t h = mod32(div32(row, L), H), b = div32(row, L * H);
  if (threadIdx.x != 0 || mod32(row, L) != 0 || mod32(h, div32(H, Hk)) != 0) return;
  if (a.k.stride[2] != E || a.v.stride[2] != E) return;
  const int64_t S = key_count(a);
  const SplitRange r = split_range(first_key(a, S), S, min_keys, splits, split);
  if (r.j1 <= r.j0) return;
  const int64_t hk = div32(h, div32(H, Hk)), bytes = (r.j1 - r.j0) * E * int64_t(sizeof(T));
  prefetch_l2(reinterpret_cast<const T*>(a.k.data) + off4(a.k, b, hk, r.j0, 0), bytes);
  prefetch_l2(reinterpret_cast<const T*>(a.v.data) + off4(a.v, b, hk, r.j0, 0), bytes);
}

// barrier.cluster in two halves (every thread of every block of the cluster executes both).
__device__ inline void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ inline void cluster_wait() {
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}

// The splits of a row are one thread-block cluster (grid (rows, splits), cluster (1, splits)):
// each block writes its partial into block 0's shared memory (distributed shared memory; the
// stores go out without waiting for a reply, once every block of the cluster has started), one
// cluster barrier, and block 0 merges them from its own shared memory and writes the row. No global
// scratch, counters or fences; a captured graph replays it as is.
template <int G, int W, typename T>
__global__ void __launch_bounds__(32 * W) decode_attention_kernel(Attention a, int min_keys) {
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  const int splits = static_cast<int>(cluster.dim_blocks().y);
  const int split = static_cast<int>(cluster.block_rank());
  // The first phase of the cluster barrier: arrived at once, waited on before a block writes
  // into block 0's shared memory, which must exist by then (a block of a cluster may start
  // after another; the wait returns once every block has arrived, i.e. started).
  if (splits > 1) cluster_arrive_relaxed();
  pdl_trigger();
  prefetch_split<T>(a, blockIdx.x, min_keys, splits, split);
  pdl_wait();
  const int64_t S = key_count(a);
  const auto [active, j0, j1] = split_range(first_key(a, S), S, min_keys, splits, split);
  const BlockPartial p = decode_block<G, W, T>(a, blockIdx.x, j0, j1);
  if (splits == 1) {
    if (threadIdx.x < G) store_row<T>(a, blockIdx.x, p.o, p.l);
    return;
  }
  // Block 0's slots for the active splits' partials.
  __shared__ float part_m[kMaxClusterSplits], part_l[kMaxClusterSplits];
  __shared__ float4 part_o[kMaxClusterSplits][G];
  cluster_wait();
  if (split < active && threadIdx.x < G) {
    if (threadIdx.x == 0) {
      cluster.map_shared_rank(part_m, 0)[split] = p.m;
      cluster.map_shared_rank(part_l, 0)[split] = p.l;
    }
    cluster.map_shared_rank(&part_o[0][0], 0)[split * G + threadIdx.x] = p.o;
  }
  // Block 0 is the only one whose shared memory is read, and it waits here until every store
  // has arrived: the others may exit once past the barrier.
  cluster.sync();
  if (split == 0 && threadIdx.x < G)
    merge_and_store<T>(a, blockIdx.x, active, [&](int sp) {
      return BlockPartial{part_m[sp], part_l[sp], part_o[sp][threadIdx.x]};
    });
}

// The general path's split rows stop below 2 * kFillRows blocks, so their scratch has a fixed
// bound: a context's workspace (Attention::scratch), or for a kernel called outside a context
// one allocated once per host thread at that bound, never regrown (a captured graph keeps its
// address).
constexpr int64_t kFillRows = 264;
constexpr size_t kScratchFloats = 2 * kFillRows * (2 + 32 * kMaxPerLane);
float* thread_scratch() {
  thread_local float* p = nullptr;
  if (!p) IP_CUDA_CHECK(cudaMalloc(&p, kScratchFloats * sizeof(float)), "attention scratch");
  return p;
}
template <int G, typename T>
void launch_decode(const Attention& a, int64_t rows, int splits, cudaStream_t s) {
  // Set once per kernel, on the first call (a context's first call runs before any graph
  // capture): clusters of 16 blocks, past the portable size; and a cluster's blocks placed on
  // SMs by load (several may share one) instead of spread one an SM. A decode step at s_max 4096
  // on the H200, three runs each: 0.269-0.270 against 0.276 ms at position 200, 0.325-0.326
  // against 0.328-0.329 at 3000 (the default policy measured as spread).
  static const bool configured = [] {
    IP_CUDA_CHECK(cudaFuncSetAttribute(decode_attention_kernel<G, kDecodeWarps, T>,
                                       cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
                  "attention clusters");
    IP_CUDA_CHECK(cudaFuncSetAttribute(decode_attention_kernel<G, kDecodeWarps, T>,
                                       cudaFuncAttributeClusterSchedulingPolicyPreference,
                                       cudaClusterSchedulingPolicyLoadBalancing),
                  "attention cluster scheduling");
    return true;
  }();
  (void)configured;
  const int c = std::min(splits, kMaxClusterSplits);
  launch_pdl_cluster(decode_attention_kernel<G, kDecodeWarps, T>,
                     dim3(static_cast<unsigned>(rows), c), 32 * kDecodeWarps, dim3(1, c, 1), s, a,
                     kMinKeys);
}

// Enough blocks to fill the GPU when there are few rows (decode), at most kFillRows (one wave:
// Llama-3.2-1B's 32 query rows took 16 splits, 512 blocks, two waves of the decode kernel, 12.7
// us a layer at position 200), chunks of >= kChunk keys. With a device key count the split
// depends on the rows only (the count is not known here; each block takes its share of the keys
// actually present).
int split_count(const Attention& a, int64_t rows) {
  const int64_t S = a.k.size[2];
  int splits = 1;
  while (rows * splits * 2 <= kFillRows && (a.kv_len ? splits < 64 : S / (splits * 2) >= kChunk))
    splits *= 2;
  return splits;
}

int64_t row_count(const Attention& a) {
  return a.q.size[0] * a.q.size[1] * a.q.size[2];
}

}  // namespace

size_t attention_workspace_bytes(const Attention& a) {
  const int64_t rows = row_count(a);
  if (rows == 0 || decode_group(a) > 0 || split_count(a, rows) == 1) return 0;
  return kScratchFloats * sizeof(float);
}

void attention(const Attention& a, void* stream) {
  const int64_t rows = row_count(a);
  const int64_t Ev = a.v.size[3];
  IP_CHECK(a.q.size[3] <= 32 * kMaxPerLane && Ev <= 32 * kMaxPerLane, kUnsupported,
           "[cuda] scaled_dot_product_attention supports head dims up to ", 32 * kMaxPerLane);
  if (rows == 0) return;
  const int splits = split_count(a, rows);
  const cudaStream_t s = as_stream(stream);
  if (const int G = decode_group(a); G > 0) {
    using Launch = void (*)(const Attention&, int64_t, int, cudaStream_t);
    constexpr Launch kFloat[] = {launch_decode<1, float>,  launch_decode<2, float>,
                                 launch_decode<4, float>,  launch_decode<8, float>,
                                 launch_decode<16, float>, launch_decode<32, float>};
    constexpr Launch kBf16[] = {launch_decode<1, __nv_bfloat16>,  launch_decode<2, __nv_bfloat16>,
                                launch_decode<4, __nv_bfloat16>,  launch_decode<8, __nv_bfloat16>,
                                launch_decode<16, __nv_bfloat16>, launch_decode<32, __nv_bfloat16>};
    constexpr Launch kHalf[] = {launch_decode<1, __half>,  launch_decode<2, __half>,
                                launch_decode<4, __half>,  launch_decode<8, __half>,
                                launch_decode<16, __half>, launch_decode<32, __half>};
    const Launch* table = a.q.dtype == DType::kBFloat16  ? kBf16
                          : a.q.dtype == DType::kFloat16 ? kHalf
                                                         : kFloat;
    table[__builtin_ctz(static_cast<unsigned>(G))](a, rows, splits, s);
    IP_CUDA_CHECK(cudaGetLastError(), "attention");
    return;
  }
  Partial part{};
  if (splits > 1) {
    float* base = a.scratch ? a.scratch : thread_scratch();
    part = {base, base + rows * splits, base + 2 * rows * splits};
  }
  launch_pdl(attention_kernel, dim3(static_cast<unsigned>(rows), splits), 32 * kWarps, s, a, part,
             splits);
  IP_CUDA_CHECK(cudaGetLastError(), "attention");
  if (splits > 1) {
    launch_pdl(merge_kernel, static_cast<unsigned>(rows), 128, s, a, part, splits);
    IP_CUDA_CHECK(cudaGetLastError(), "attention merge");
  }
}

}  // namespace inplace::cuda
