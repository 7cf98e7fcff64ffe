// Decode-oriented attention: each block owns one (batch, head, query row) and a chunk of the
// keys; its warps walk the keys with an online softmax (running max, sum and weighted values
// per warp, the head dim spread across lanes), then merge. Chunks of one row are merged by a
// second kernel, or on the decode fast path by the row's thread-block cluster, so a long cache
// is read by many blocks at once (split-K, flash-decoding).
#include <cooperative_groups.h>

#include <algorithm>
#include <cfloat>

#include "kernels/cuda/device_common.cuh"

namespace inplace::cuda {

namespace {

constexpr int kWarps = 4;
constexpr int kMaxPerLane = 8;  // head dims up to 256
constexpr int kChunk = 256;     // keys per block before the sequence is split

__device__ inline int64_t off4(const Operand& o, int64_t b, int64_t h, int64_t i, int64_t j) {
  return b * o.stride[0] + h * o.stride[1] + i * o.stride[2] + j * o.stride[3];
}

// The keys present: k's dim 2, or the device extent (a slice end, clamped like Python's).
__device__ inline int64_t key_count(const Attention& a) {
  const int64_t S = a.k.size[2];
  if (!a.kv_len) return S;
  int64_t e = *a.kv_len;
  if (e < 0) e += S;
  return e < 0 ? 0 : (e > S ? S : e);
}

struct Partial {
  float* m;    // [rows, splits]
  float* l;    // [rows, splits]
  float* acc;  // [rows, splits, Ev]
};

__global__ void attention_kernel(Attention a, Partial part, int splits) {
  pdl_begin();
  const int64_t H = a.q.size[1], L = a.q.size[2], E = a.q.size[3];
  const int64_t S = key_count(a), Ev = a.v.size[3], Hk = a.k.size[1];
  const int64_t row = blockIdx.x;  // (b, h, i)
  const int64_t i = row % L, h = (row / L) % H, b = row / (L * H);
  const int64_t hk = h / (H / Hk);
  const int split = blockIdx.y;
  const int64_t per = (S + splits - 1) / splits;
  const int64_t j0 = split * per, j1 = min(S, j0 + per);
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

// The decode fast path (float32 q, k, v and out with unit-stride head dims, E == Ev, no mask,
// not causal): lanes work in groups of E/4, each lane one float4 of a key and of its value, so
// a warp reads 32/(E/4) keys at once and a group unrolls kUnroll keys to keep loads in flight.
// The split count follows the keys present (read on the device): blocks past it take no keys,
// and the splits of a row, one thread-block cluster, merge through distributed shared memory,
// so one launch does both halves.
constexpr int kUnroll = 4;
// Keys per split at least: at position 200 four splits of ~50 keys beat seven of ~29 (the
// merge waits on every split; 0.389 -> 0.356 ms a decode step on the H200), while long prefixes
// still use every split the launch allows.
constexpr int kMinKeys = 64;
// Warps of a decode block: 8 groups of 16 lanes (head dim 64) take 64 keys a pass, so a split of
// kMinKeys keys is read in one round trip (with 4 warps: 0.337 ms a step at position 200 and
// 0.449 ms at 3000, against 0.340 and 0.432 ms).
constexpr int kDecodeWarps = 8;
// Splits of a row at most: one cluster (sm_90 runs clusters of up to 16 blocks).
constexpr int kMaxClusterSplits = 16;

__device__ inline float4 ld4(const float* p) {
  return *reinterpret_cast<const float4*>(p);
}

// One block's share of a row: its split of the keys walked by kGroups groups with an online
// softmax, then the groups merged in shared memory. Threads < G return the block's running max
// M, sum L and unnormalised output o (one float4 of the head dim each); L is 0 when the block
// saw no key.
struct BlockPartial {
  float m, l;
  float4 o;
};

template <int G, int W>
__device__ inline BlockPartial decode_block(const Attention& a, int64_t j0, int64_t j1) {
  constexpr int kGroups = 32 * W / G;
  const int64_t H = a.q.size[1], L = a.q.size[2];
  const int64_t Hk = a.k.size[1];
  const int64_t row = blockIdx.x;
  const int64_t i = row % L, h = (row / L) % H, b = row / (L * H);
  const int64_t hk = h / (H / Hk);
  const int g = threadIdx.x / G, lane = threadIdx.x % G;
  const int d = lane * 4;
  const float scale = static_cast<float>(a.scale);
  const float4 q = ld4(reinterpret_cast<const float*>(a.q.data) + off4(a.q, b, h, i, d));
  const float* kb = reinterpret_cast<const float*>(a.k.data) + off4(a.k, b, hk, 0, d);
  const float* vb = reinterpret_cast<const float*>(a.v.data) + off4(a.v, b, hk, 0, d);
  const int64_t ks = a.k.stride[2], vs = a.v.stride[2];
  float m = -FLT_MAX, l = 0.f;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  // The loop bound is the same for every lane (a warp holds several groups, and the shuffles
  // below need all its lanes): each group takes key base + u * kGroups + g.
  for (int64_t base = j0; base < j1; base += kGroups * kUnroll) {
    const int64_t jb = base + g;
    float4 kv[kUnroll], vv[kUnroll];
    float s[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t j = jb + u * kGroups;
      if (j < j1) {
        kv[u] = ld4(kb + j * ks);
        vv[u] = ld4(vb + j * vs);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t j = jb + u * kGroups;
      float t = j < j1 ? q.x * kv[u].x + q.y * kv[u].y + q.z * kv[u].z + q.w * kv[u].w : 0.f;
#pragma unroll
      for (int o = G / 2; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
      s[u] = j < j1 ? t * scale : -INFINITY;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (s[u] == -INFINITY) continue;
      const float m_new = fmaxf(m, s[u]);
      const float c = __expf(m - m_new), p = __expf(s[u] - m_new);
      l = l * c + p;
      acc.x = acc.x * c + p * vv[u].x;
      acc.y = acc.y * c + p * vv[u].y;
      acc.z = acc.z * c + p * vv[u].z;
      acc.w = acc.w * c + p * vv[u].w;
      m = m_new;
    }
  }
  // Merge the groups of this block in shared memory.
  __shared__ float sm[kGroups], sl[kGroups];
  __shared__ float4 sacc[kGroups][G];
  if (lane == 0) {
    sm[g] = m;
    sl[g] = l;
  }
  sacc[g][lane] = acc;
  __syncthreads();
  BlockPartial r{-FLT_MAX, 0.f, make_float4(0.f, 0.f, 0.f, 0.f)};
  if (threadIdx.x < G) {
    for (int w = 0; w < kGroups; ++w)
      if (sl[w] > 0.f) r.m = fmaxf(r.m, sm[w]);
    for (int w = 0; w < kGroups; ++w) {
      if (sl[w] == 0.f) continue;
      const float c = __expf(sm[w] - r.m);
      r.l += sl[w] * c;
      const float4 x = sacc[w][threadIdx.x];
      r.o.x += x.x * c, r.o.y += x.y * c, r.o.z += x.z * c, r.o.w += x.w * c;
    }
  }
  return r;
}

// out[b, h, i, 4t..4t+4) = o / L (0 when no key was seen), written by thread t < G.
__device__ inline void store_row(const Attention& a, const float4& o, float lsum) {
  const int64_t H = a.q.size[1], L = a.q.size[2];
  const int64_t row = blockIdx.x;
  const int64_t i = row % L, h = (row / L) % H, b = row / (L * H);
  const float r = lsum > 0.f ? 1.f / lsum : 0.f;
  float* out = reinterpret_cast<float*>(a.out.data) + off4(a.out, b, h, i, threadIdx.x * 4);
  for (int t = 0; t < 4; ++t) out[t * a.out.stride[3]] = (&o.x)[t] * r;
}

// The splits active for S keys: one per min_keys keys, at most `splits`.
__device__ inline int active_splits(int64_t S, int min_keys, int splits) {
  const int active = static_cast<int>((S + min_keys - 1) / min_keys);
  return active < 1 ? 1 : (active > splits ? splits : active);
}

// The splits of a row are one thread-block cluster (grid (rows, splits), cluster (1, splits)):
// each block leaves its partial in its shared memory, and after a cluster barrier block 0 merges
// them through distributed shared memory and writes the row. No global scratch, counters or
// fences; a captured graph replays it as is.
template <int G, int W>
__global__ void __launch_bounds__(32 * W) decode_attention_kernel(Attention a, int min_keys) {
  pdl_begin();
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  const int splits = static_cast<int>(cluster.dim_blocks().y);
  const int split = static_cast<int>(cluster.block_rank());
  const int64_t S = key_count(a);
  const int active = active_splits(S, min_keys, splits);
  const int64_t per = (S + active - 1) / active;
  const int64_t j0 = split < active ? split * per : S, j1 = split < active ? min(S, j0 + per) : S;
  const BlockPartial p = decode_block<G, W>(a, j0, j1);
  __shared__ float part_m, part_l;
  __shared__ float4 part_o[G];
  if (threadIdx.x < G) {
    if (threadIdx.x == 0) {
      part_m = p.m;
      part_l = p.l;
    }
    part_o[threadIdx.x] = p.o;
  }
  if (splits == 1) {
    if (threadIdx.x < G) store_row(a, p.o, p.l);
    return;
  }
  cluster.sync();
  if (split == 0 && threadIdx.x < G) {
    float M = -FLT_MAX;
    for (int sp = 0; sp < active; ++sp) {
      const float l = *cluster.map_shared_rank(&part_l, sp);
      if (l > 0.f) M = fmaxf(M, *cluster.map_shared_rank(&part_m, sp));
    }
    float Lsum = 0.f;
    float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int sp = 0; sp < active; ++sp) {
      const float l = *cluster.map_shared_rank(&part_l, sp);
      if (l == 0.f) continue;
      const float c = __expf(*cluster.map_shared_rank(&part_m, sp) - M);
      Lsum += l * c;
      const float4 x = cluster.map_shared_rank(part_o, sp)[threadIdx.x];
      o.x += x.x * c, o.y += x.y * c, o.z += x.z * c, o.w += x.w * c;
    }
    store_row(a, o, Lsum);
  }
  cluster.sync();  // every block's shared memory stays until block 0 has read it
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// The fast path's conditions; the group width (E / 4 lanes) or 0.
int decode_group(const Attention& a) {
  const int64_t E = a.q.size[3];
  if (a.has_mask || a.causal || E != a.v.size[3] || E % 4 != 0 || E / 4 > 32) return 0;
  const int G = static_cast<int>(E / 4);
  if ((G & (G - 1)) != 0) return 0;
  for (const Operand* o : {&a.q, &a.k, &a.v, &a.out}) {
    if (o->dtype != DType::kFloat32 || !aligned16(o->data)) return 0;
    if (o != &a.out && o->stride[3] != 1) return 0;
    for (int d = 0; d < 3; ++d)
      if (o != &a.out && o->size[d] > 1 && o->stride[d] % 4 != 0) return 0;
  }
  return G;
}

// The general path's split rows stop below 2 * kFillRows blocks, so their scratch has a fixed
// bound: allocated once per thread, at that bound, never regrown (a captured graph keeps its
// address).
constexpr int64_t kFillRows = 264;
constexpr size_t kScratchFloats = 2 * kFillRows * (2 + 32 * kMaxPerLane);
float* scratch() {
  thread_local float* p = nullptr;
  if (!p) IP_CUDA_CHECK(cudaMalloc(&p, kScratchFloats * sizeof(float)), "attention scratch");
  return p;
}
template <int G>
void launch_decode(const Attention& a, int64_t rows, int splits, cudaStream_t s) {
  // Clusters of 16 blocks are past the portable size: allowed once per kernel, on the first
  // call (a context's first call runs before any graph capture).
  static const bool allowed = [] {
    IP_CUDA_CHECK(cudaFuncSetAttribute(decode_attention_kernel<G, kDecodeWarps>,
                                       cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
                  "attention clusters");
    return true;
  }();
  (void)allowed;
  const int c = std::min(splits, kMaxClusterSplits);
  launch_pdl_cluster(decode_attention_kernel<G, kDecodeWarps>, dim3(static_cast<unsigned>(rows), c),
                     32 * kDecodeWarps, dim3(1, c, 1), s, a, kMinKeys);
}

}  // namespace

void attention(const Attention& a, void* stream) {
  const int64_t rows = a.q.size[0] * a.q.size[1] * a.q.size[2];
  const int64_t S = a.k.size[2], Ev = a.v.size[3];
  IP_CHECK(a.q.size[3] <= 32 * kMaxPerLane && Ev <= 32 * kMaxPerLane, kUnsupported,
           "[cuda] scaled_dot_product_attention supports head dims up to ", 32 * kMaxPerLane);
  if (rows == 0) return;
  // Enough blocks to fill the GPU when there are few rows (decode), chunks of >= kChunk keys.
  // With a device key count the split depends on the rows only (the count is not known here;
  // each block takes its share of the keys actually present).
  int splits = 1;
  while (rows * splits < kFillRows && (a.kv_len ? splits < 64 : S / (splits * 2) >= kChunk))
    splits *= 2;
  const cudaStream_t s = as_stream(stream);
  if (const int G = decode_group(a); G > 0) {
    using Launch = void (*)(const Attention&, int64_t, int, cudaStream_t);
    constexpr Launch kLaunch[] = {launch_decode<1>, launch_decode<2>,  launch_decode<4>,
                                  launch_decode<8>, launch_decode<16>, launch_decode<32>};
    kLaunch[__builtin_ctz(static_cast<unsigned>(G))](a, rows, splits, s);
    IP_CUDA_CHECK(cudaGetLastError(), "attention");
    return;
  }
  Partial part{};
  if (splits > 1) {
    float* base = scratch();
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
