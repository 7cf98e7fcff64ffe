// Decode attention with the product of its result in the epilogue (a decoder layer's attention
// and its o_proj in one launch; the engine's epilogue product, engine/launch_groups.h). Each
// head is one thread-block cluster of `splits` blocks, as in attention.cu's decode kernel: the
// blocks walk their splits of the keys, block 0 merges the partials and stores the head's row of
// the attention result, then sends that row into every block of the cluster (distributed shared
// memory). Block s of a head multiplies the row by its share of the weight rows at the head's
// columns, w[n0..n1, h*E .. h*E + E), which it fetched into registers before waiting for the
// previous kernel (weights are constants), and leaves the head's partial sums in the workspace.
// The last head to finish slice s (a counter per slice, reset by that block, so a captured graph
// replays it) adds the heads' partials in head order, then the bias and the residual, and
// stores y[n0..n1). A launch fewer a layer than attention followed by the o_proj GEMV.
#include <cooperative_groups.h>

#include <algorithm>

#include "kernels/cuda/attention_device.cuh"
#include "kernels/cuda/gemv_device.cuh"
#include "kernels/cuda/persistent.h"

namespace inplace::cuda {

namespace {

using decode::BlockPartial;
using decode::cluster_arrive_relaxed;
using decode::cluster_wait;
using decode::decode_block;
using decode::decode_group;
using decode::kDecodeWarps;
using decode::key_count;
using decode::kMaxClusterSplits;
using decode::kMinKeys;
using decode::merge_and_store;
using decode::prefetch_split;
using decode::row_count;
using decode::split_count;
using decode::split_range;
using decode::store_row;

// 16-byte weight chunks a thread fetches before the wait: a head's 64 columns of 64 weight rows
// (a 1024-wide o_proj over 16 splits) are 512 chunks, two a thread.
constexpr int kPre = 2;
// Blocks an SM at least (at most 85 registers a thread), as attention.cu's decode kernel: a
// cluster of 16 blocks needs room on 16 SMs of one GPC at once, and with two an SM the 16
// clusters of a 16-head layer do not all fit in one wave.
constexpr int kMinBlocks = 3;
// Heads' partials the last block of a slice requests at once before it adds them in order.
constexpr int kSumBatch = 16;

struct Product {
  const __nv_bfloat16* w;  // [n, H * E]
  const float* bias;       // [n] or null
  const float* residual;   // [n] or null
  float* y;                // [n]
  int64_t n;
  int32_t* counters;  // [kMaxClusterSplits], zero between launches
  float* partial;     // [H, n]
};

template <int G, int W>
__global__ void __launch_bounds__(32 * W, kMinBlocks)
    attention_product_kernel(Attention a, Product p, int min_keys) {
  namespace cg = cooperative_groups;
  constexpr int E = 4 * G, P = E / 8;  // a head's columns of a weight row: P 16-byte chunks
  cg::cluster_group cluster = cg::this_cluster();
  const int splits = static_cast<int>(cluster.dim_blocks().y);
  const int split = static_cast<int>(cluster.block_rank());
  const int64_t h = blockIdx.x, H = gridDim.x, K = H * E;
  // This block's rows of the product, [n0, n1), as chunks c: row n0 + c / P, columns
  // h * E + 8 * (c % P) .. + 8. Thread t takes chunks t, t + blockDim.x, ...
  const int64_t per = (p.n + splits - 1) / splits;
  const int64_t n0 = min(p.n, split * per), n1 = min(p.n, n0 + per), chunks = (n1 - n0) * P;
  const __nv_bfloat16* wh = p.w + h * E;
  uint4 raw[kPre];
  auto fetch = [&](int64_t base) {
#pragma unroll
    for (int u = 0; u < kPre; ++u) {
      const int64_t c = base + threadIdx.x + u * blockDim.x;
      if (c < chunks)
        raw[u] = __ldcs(reinterpret_cast<const uint4*>(wh + (n0 + c / P) * K + (c % P) * 8));
    }
  };
  // The cluster barrier's first phase (attention.cu's decode kernel says why).
  if (splits > 1) cluster_arrive_relaxed();
  pdl_trigger();
  fetch(0);
  prefetch_split(a, h, min_keys, splits, split);
  pdl_wait();
  const auto [active, j0, j1] = split_range(key_count(a), min_keys, splits, split);
  const BlockPartial bp = decode_block<G, W>(a, h, j0, j1);
  // The head's row of the attention result, in every block of the cluster.
  __shared__ float4 row[G];
  if (splits == 1) {
    if (threadIdx.x < G) row[threadIdx.x] = store_row(a, h, bp.o, bp.l);
    __syncthreads();
  } else {
    __shared__ float part_m[kMaxClusterSplits], part_l[kMaxClusterSplits];
    __shared__ float4 part_o[kMaxClusterSplits][G];
    cluster_wait();
    if (split < active && threadIdx.x < G) {
      if (threadIdx.x == 0) {
        cluster.map_shared_rank(part_m, 0)[split] = bp.m;
        cluster.map_shared_rank(part_l, 0)[split] = bp.l;
      }
      cluster.map_shared_rank(&part_o[0][0], 0)[split * G + threadIdx.x] = bp.o;
    }
    cluster.sync();
    if (split == 0 && threadIdx.x < G) {
      const float4 v = merge_and_store(a, h, active, [&](int sp) {
        return BlockPartial{part_m[sp], part_l[sp], part_o[sp][threadIdx.x]};
      });
      for (int r = 0; r < splits; ++r) cluster.map_shared_rank(row, r)[threadIdx.x] = v;
    }
    // Every block waits for block 0's row; block 0's shared memory is read by no one after.
    cluster.sync();
  }
  // The head's partial sums of rows n0..n1: a row's P chunks are P adjacent lanes.
  const float* x = reinterpret_cast<const float*>(row);
  for (int64_t base = 0; base < chunks; base += kPre * blockDim.x) {
    if (base > 0) fetch(base);
#pragma unroll
    for (int u = 0; u < kPre; ++u) {
      const int64_t c = base + threadIdx.x + u * blockDim.x;
      float s = 0.f;
      if (c < chunks) {
        float wf[8];
        gemv::widen8(raw[u], wf);
        const float* xc = x + (c % P) * 8;
        s = gemv::dot8(reinterpret_cast<const float4*>(xc)[0],
                       reinterpret_cast<const float4*>(xc)[1], wf);
      }
#pragma unroll
      for (int o = P / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
      if (c < chunks && c % P == 0) p.partial[h * p.n + n0 + c / P] = s;
    }
  }
  // The last head to finish this slice sums the heads' partials in head order.
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(&p.counters[split], 1) == H - 1;
    if (last) __threadfence();
  }
  __syncthreads();
  if (!last) return;
  for (int64_t r = n0 + threadIdx.x; r < n1; r += blockDim.x) {
    float v = 0.f;
    for (int64_t h0 = 0; h0 < H; h0 += kSumBatch) {
      float part[kSumBatch];
#pragma unroll
      for (int i = 0; i < kSumBatch; ++i)
        part[i] = h0 + i < H ? __ldcg(p.partial + (h0 + i) * p.n + r) : 0.f;
#pragma unroll
      for (int i = 0; i < kSumBatch; ++i)
        if (h0 + i < H) v += part[i];
    }
    if (p.bias) v = v + p.bias[r];
    if (p.residual) v = v + p.residual[r];
    p.y[r] = v;
  }
  if (threadIdx.x == 0) p.counters[split] = 0;
}

template <int G>
void launch(const AttentionProduct& ap, cudaStream_t s) {
  static const bool allowed = [] {  // clusters of 16: see attention.cu's launch_decode
    IP_CUDA_CHECK(cudaFuncSetAttribute(attention_product_kernel<G, kDecodeWarps>,
                                       cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
                  "attention product clusters");
    return true;
  }();
  (void)allowed;
  const Attention& a = ap.a;
  const int64_t H = row_count(a);
  const int c = std::min(split_count(a, H), kMaxClusterSplits);
  Product p{static_cast<const __nv_bfloat16*>(ap.w),
            ap.bias,
            ap.residual,
            ap.y,
            ap.n,
            static_cast<int32_t*>(ap.workspace),
            reinterpret_cast<float*>(static_cast<char*>(ap.workspace) +
                                     kMaxClusterSplits * sizeof(int32_t))};
  launch_pdl_cluster(attention_product_kernel<G, kDecodeWarps>, dim3(static_cast<unsigned>(H), c),
                     32 * kDecodeWarps, dim3(1, c, 1), s, a, p, kMinKeys);
}

}  // namespace

std::string attention_product_supports(const Attention& a, int64_t n) {
  const int G = decode_group(a);
  if (G < 4) return "attention that is not the decode form with a head dim of 16 to 128";
  if (a.q.size[0] != 1 || a.q.size[2] != 1) return "more than one query row a head";
  if (a.out.stride[3] != 1 || (a.q.size[1] > 1 && a.out.stride[1] != a.q.size[3]))
    return "an attention result that is not one contiguous row";
  if (n < 1) return "an empty product";
  return "";
}

size_t attention_product_workspace_bytes(const Attention& a, int64_t n) {
  return kMaxClusterSplits * sizeof(int32_t) + static_cast<size_t>(row_count(a) * n) * 4;
}

bool attention_product(const AttentionProduct& p, void* stream) {
  if (recording()) return false;  // the steps are recorded one by one, each as its task
  using Launch = void (*)(const AttentionProduct&, cudaStream_t);
  constexpr Launch kLaunch[] = {launch<4>, launch<8>, launch<16>, launch<32>};
  kLaunch[__builtin_ctz(static_cast<unsigned>(decode_group(p.a))) - 2](p, as_stream(stream));
  IP_CUDA_CHECK(cudaGetLastError(), "attention with its product");
  return true;
}

}  // namespace inplace::cuda
