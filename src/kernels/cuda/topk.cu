// topk along one dim (topk.h). Every element becomes a distinct 64-bit key, its value's order key
// above the complement of its index, so that a larger key is exactly an earlier place in the
// cpu's order and no two keys tie: the k largest keys are then one set, found by a radix select
// of the k-th (8 bits a pass, stopping once the k-th's bucket is taken whole), gathered in any
// order and sorted, so the result never depends on which thread came first.
#include <cooperative_groups.h>

#include <algorithm>

#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/topk.h"

namespace inplace::cuda {

namespace {

namespace cg = cooperative_groups;

// Blocks of 512 threads of at most 64 registers, two an SM: a cluster of 16 blocks then needs 8
// SMs of one GPC, not 16.
constexpr int kThreads = 512;
constexpr int kMaxCluster = 16;      // blocks a lane (a thread-block cluster, past the portable 8)
constexpr int64_t kMinChunk = 4096;  // elements a block at least, unless the lane is shorter
constexpr int kCached = 32;          // keys a thread keeps in registers across the passes

struct Shared {
  uint64_t list[kTopkMaxK];    // this block's candidates (zero past them)
  uint64_t merged[kTopkMaxK];  // the cluster's first block: the lane's k
  int hist[256];
  int warp_sum[8];
  int digit, count, greater, taken;
};

// A float's place in the order as an unsigned key: NaN above +inf (all NaNs alike), -0 as +0.
__device__ inline uint32_t order_key(float f) {
  if (f != f) return 0xFFFFFFFFu;
  if (f == 0.f) return 0x80000000u;
  const uint32_t b = __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// Every real key is above 0 (the smallest, -inf's, is 0x007FFFFF above 32 zero bits), so 0 pads.
__device__ inline uint64_t element_key(uint32_t value_key, int64_t index) {
  return (uint64_t(value_key) << 32) | (0xFFFFFFFFu - static_cast<uint32_t>(index));
}

__device__ inline int64_t key_index(uint64_t key) {
  return static_cast<int64_t>(0xFFFFFFFFu - static_cast<uint32_t>(key));
}

// The digit whose bucket holds the r-th largest key (r >= 1, the buckets' total >= r), with its
// count and the count of the buckets above it. Threads 0..255 hold one bucket each.
__device__ inline void pick_digit(Shared& s, int r) {
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  int c = 0, suffix = 0;
  if (t < 256) {
    c = s.hist[t];
    suffix = c;
    for (int o = 1; o < 32; o <<= 1) {
      const int v = __shfl_down_sync(0xFFFFFFFFu, suffix, o);
      if (lane + o < 32) suffix += v;
    }
    if (lane == 0) s.warp_sum[w] = suffix;
  }
  __syncthreads();
  if (t < 256) {
    for (int u = w + 1; u < 8; ++u) suffix += s.warp_sum[u];
    if (suffix >= r && suffix - c < r) {
      s.digit = t;
      s.count = c;
      s.greater = suffix - c;
    }
  }
  __syncthreads();
}

// The smallest key T with exactly k keys >= T, over the keys `visit` passes to its function as
// (key, valid): each thread its own, every thread of the block the same number of calls. The
// valid keys are distinct apart from zeros, and at least k of them are not zero.
template <typename Visit>
__device__ uint64_t select_threshold(const Visit& visit, int k, Shared& s) {
  uint64_t prefix = 0, mask = 0;
  int r = k;  // how many keys still to take among those matching prefix
  for (int shift = 56; shift >= 0; shift -= 8) {
    if (threadIdx.x < 256) s.hist[threadIdx.x] = 0;
    __syncthreads();
    visit([&](uint64_t key, bool valid) {
      const bool hit = valid && (key & mask) == prefix;
      const int bin = hit ? static_cast<int>((key >> shift) & 0xFF) : 256;
      // One atomic per bucket a warp: the top bytes of a row's keys mostly share a few buckets.
      const unsigned peers = __match_any_sync(0xFFFFFFFFu, bin);
      if (hit && static_cast<int>(threadIdx.x & 31) == __ffs(peers) - 1)
        atomicAdd(&s.hist[bin], __popc(peers));
    });
    __syncthreads();
    pick_digit(s, r);
    const int count = s.count;
    r -= s.greater;
    prefix |= uint64_t(s.digit) << shift;
    mask |= uint64_t(0xFF) << shift;
    if (count == r) break;  // the bucket is taken whole: every key >= prefix
  }
  return prefix;
}

// Writes the valid keys >= threshold (at most k) to out, in no particular order.
template <typename Visit>
__device__ void gather(const Visit& visit, uint64_t threshold, int k, uint64_t* out, Shared& s) {
  if (threadIdx.x == 0) s.taken = 0;
  __syncthreads();
  visit([&](uint64_t key, bool valid) {
    const bool take = valid && key >= threshold;
    const unsigned ballot = __ballot_sync(0xFFFFFFFFu, take);
    if (!ballot) return;
    const int lane = threadIdx.x & 31;
    int base = 0;
    if (lane == 0) base = atomicAdd(&s.taken, __popc(ballot));
    base = __shfl_sync(0xFFFFFFFFu, base, 0);
    const int pos = base + __popc(ballot & ((1u << lane) - 1u));
    if (take && pos < k) out[pos] = key;
  });
  __syncthreads();
}

// Sorts x[0, n) descending (n a power of two) by a bitonic network.
__device__ void sort_descending(uint64_t* x, int n) {
  for (int size = 2; size <= n; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int t = threadIdx.x; t < n / 2; t += blockDim.x) {
        const int i = 2 * t - (t & (stride - 1)), j = i + stride;
        const uint64_t a = x[i], b = x[j];
        if ((a < b) == ((i & size) == 0)) {
          x[i] = b;
          x[j] = a;
        }
      }
      __syncthreads();
    }
}

// A block's chunk of a lane, [c0, c0 + m): its keys from registers (kCache) or from memory.
template <typename T, bool kCache>
struct Chunk {
  const T* in;
  int64_t stride, c0;
  int m;
  uint32_t cache[kCache ? kCached : 1];

  __device__ uint32_t load(int i) const { return order_key(to_f(in[(c0 + i) * stride])); }
  __device__ void fill() {
    if constexpr (kCache) {
#pragma unroll
      for (int j = 0; j < kCached; ++j) {
        const int i = static_cast<int>(threadIdx.x) + j * kThreads;
        cache[j] = i < m ? load(i) : 0u;
      }
    }
  }
  template <typename F>
  __device__ void operator()(F f) const {
    if constexpr (kCache) {
#pragma unroll
      for (int j = 0; j < kCached; ++j) {
        if (j * kThreads >= m) break;  // the same for the whole block
        const int i = static_cast<int>(threadIdx.x) + j * kThreads;
        f(element_key(cache[j], c0 + i), i < m);
      }
    } else {
      for (int base = 0; base < m; base += kThreads) {
        const int i = base + static_cast<int>(threadIdx.x);
        f(i < m ? element_key(load(i), c0 + i) : 0, i < m);
      }
    }
  }
};

// The lane's k, sorted from `sorted` (kpad keys, descending), to the results.
template <typename T>
__device__ void store_lane(const Topk& t, int64_t lane, const T* in, const uint64_t* sorted) {
  T* values = reinterpret_cast<T*>(t.values.data) + offset_of(t.values, lane);
  int64_t* indices = reinterpret_cast<int64_t*>(t.indices.data) + offset_of(t.indices, lane);
  for (int j = threadIdx.x; j < t.k; j += kThreads) {
    const int64_t index = key_index(sorted[j]);
    values[j * t.values_stride] = in[index * t.in_stride];  // the element itself (-0, NaN bits)
    indices[j * t.indices_stride] = index;
  }
}

// grid (cluster blocks, lanes), cluster (blocks, 1, 1): block `rank` of a lane takes elements
// [rank * chunk, (rank + 1) * chunk).
template <typename T, bool kCache>
__global__ void __launch_bounds__(kThreads, 2) topk_kernel(Topk t, int64_t chunk) {
  cg::cluster_group cluster = cg::this_cluster();
  const int blocks = static_cast<int>(cluster.dim_blocks().x);
  const int rank = static_cast<int>(cluster.block_rank());
  __shared__ Shared s;
  pdl_begin();
  const int k = static_cast<int>(t.k);
  int kpad = 1;
  while (kpad < k) kpad <<= 1;
  for (int64_t lane = blockIdx.y; lane < t.lanes; lane += gridDim.y) {
    const T* in = reinterpret_cast<const T*>(t.in.data) + offset_of(t.in, lane);
    Chunk<T, kCache> c{in, t.in_stride, rank * chunk, 0, {}};
    c.m = static_cast<int>(std::max<int64_t>(0, std::min(t.n, c.c0 + chunk) - c.c0));
    const int kb = std::min(k, c.m);
    for (int i = threadIdx.x; i < kpad; i += kThreads) s.list[i] = 0;
    __syncthreads();
    if (kb > 0) {
      c.fill();
      const uint64_t threshold = kb == c.m ? 0 : select_threshold(c, kb, s);
      gather(c, threshold, kb, s.list, s);
    }
    if (blocks == 1) {
      sort_descending(s.list, kpad);
      store_lane<T>(t, lane, in, s.list);
    } else {
      cluster.sync();  // every block's candidates are in its shared memory
      if (rank == 0) {
        const int total = blocks * k;
        auto remote = [&](auto f) {
          for (int base = 0; base < total; base += kThreads) {
            const int i = base + static_cast<int>(threadIdx.x);
            f(i < total ? cluster.map_shared_rank(s.list, i / k)[i % k] : 0, i < total);
          }
        };
        for (int i = threadIdx.x; i < kpad; i += kThreads) s.merged[i] = 0;
        const uint64_t threshold = select_threshold(remote, k, s);
        gather(remote, threshold, k, s.merged, s);
      }
      cluster.sync();  // the first block has read the others' candidates: they may go on
      if (rank == 0) {
        sort_descending(s.merged, kpad);
        store_lane<T>(t, lane, in, s.merged);
      }
    }
    __syncthreads();  // before the next lane reuses the shared memory
  }
}

template <typename T, bool kCache>
void launch(const Topk& t, int blocks, int64_t chunk, cudaStream_t s) {
  // Set once, on the first call (before any graph capture): clusters past the portable size.
  static const bool configured = [] {
    IP_CUDA_CHECK(cudaFuncSetAttribute(topk_kernel<T, kCache>,
                                       cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
                  "topk clusters");
    return true;
  }();
  (void)configured;
  const unsigned lanes = static_cast<unsigned>(std::min<int64_t>(t.lanes, 65535));
  launch_pdl_cluster(topk_kernel<T, kCache>, dim3(blocks, lanes), dim3(kThreads),
                     dim3(blocks, 1, 1), s, t, chunk);
}

template <typename T>
void launch_dtype(const Topk& t, int blocks, int64_t chunk, cudaStream_t s) {
  if (chunk <= int64_t{kCached} * kThreads)
    launch<T, true>(t, blocks, chunk, s);
  else
    launch<T, false>(t, blocks, chunk, s);
}

}  // namespace

void topk(const Topk& t, void* stream) {
  IP_CHECK(t.k >= 1 && t.k <= kTopkMaxK && t.k <= t.n, kUnsupported,
           "[cuda] topk takes 1 <= k <= ", kTopkMaxK, " and k <= the lane's ", t.n,
           " elements, got k ", t.k);
  IP_CHECK(t.n < (int64_t{1} << 31), kUnsupported, "[cuda] topk lanes of at most 2^31 - 1, got ",
           t.n);
  if (t.lanes == 0) return;
  const int blocks =
      static_cast<int>(std::clamp<int64_t>((t.n + kMinChunk - 1) / kMinChunk, 1, kMaxCluster));
  const int64_t chunk = (t.n + blocks - 1) / blocks;
  const cudaStream_t s = as_stream(stream);
  if (!visit_float_storage(t.in.dtype, [&]<typename T>() { launch_dtype<T>(t, blocks, chunk, s); }))
    IP_FAIL(kUnsupported, "[cuda] topk takes float32, bfloat16 or float16, got ",
            dtype_name(t.in.dtype));
}

}  // namespace inplace::cuda
