// Attention's decode form as device code: a block walks a split of one (batch, head, query)
// row's keys (its groups of E/4 lanes each take one key at a time, an online softmax per group),
// then merges its groups. attention.cu merges the splits of a row in a thread-block cluster.
#pragma once
#include <cfloat>

#include "kernels/cuda/device_common.cuh"

namespace inplace::cuda::decode {

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

// The first key attended: S - window past a window's start, else 0.
__device__ inline int64_t first_key(const Attention& a, int64_t S) {
  return a.window > 0 && S > a.window ? S - a.window : 0;
}

// The decode fast path (q, k, v and out of one dtype T, float32, bfloat16 or float16, with
// unit-stride head dims, E == Ev, no mask, not causal; a half T is widened to float as it is
// loaded, every sum is float32 and the output is rounded to T once, as the general path does):
// lanes work in groups of E/4, each lane four elements of a key and of its value, so
// a warp reads 32/(E/4) keys at once and a group unrolls kUnroll keys to keep loads in flight.
// The split count follows the keys present (read on the device): blocks past it take no keys.
// The splits of a row merge in one launch, through distributed shared memory in a thread-block
// cluster (attention.cu).
constexpr int kUnroll = 4;
// Keys per split at least: at position 200 four splits of ~50 keys beat seven of ~29 (the
// merge waits on every split; 0.389 -> 0.356 ms a decode step on the H200), while long prefixes
// still use every split the launch allows.
constexpr int kMinKeys = 64;
// Warps of a decode block: 8 groups of 16 lanes (head dim 64) take 64 keys a pass, so a split of
// kMinKeys keys is read in one round trip (with 4 warps: 0.337 ms a step at position 200 and
// 0.449 ms at 3000, against 0.340 and 0.432 ms).
constexpr int kDecodeWarps = 8;
// Splits of a row at most in attention.cu: one cluster (sm_90 runs clusters of up to 16 blocks).
constexpr int kMaxClusterSplits = 16;

// Four consecutive elements as float (p 16-byte aligned for float, 8-byte for a half type).
__device__ inline float4 ld4(const float* p) {
  return *reinterpret_cast<const float4*>(p);
}
__device__ inline float4 ld4(const __nv_bfloat16* p) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
  const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
  return make_float4(a.x, a.y, b.x, b.y);
}
__device__ inline float4 ld4(const __half* p) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
  const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
  return make_float4(a.x, a.y, b.x, b.y);
}
__device__ inline void store1(float* p, float v) {
  *p = v;
}
__device__ inline void store1(__nv_bfloat16* p, float v) {
  *p = __float2bfloat16_rn(v);
}
__device__ inline void store1(__half* p, float v) {
  *p = __float2half_rn(v);
}

// One block's share of a row: its split of the keys walked by kGroups groups with an online
// softmax, then the groups merged in shared memory. Threads < G return the block's running max
// M, sum L and unnormalised output o (one float4 of the head dim each); L is 0 when the block
// saw no key.
struct BlockPartial {
  float m, l;
  float4 o;
};

// The groups of a block merged in shared memory: each group's running max m, sum l and
// unnormalised output acc (one float4 of the head dim a lane) into the block's BlockPartial,
// returned by threads < G. Every thread of the block calls it.
template <int G, int W>
__device__ inline BlockPartial merge_groups(float m, float l, float4 acc) {
  constexpr int kGroups = 32 * W / G;
  const int g = threadIdx.x / G, lane = threadIdx.x % G;
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

// Key j's score against q by a group of G lanes (each holding one float4 of both): the dot
// product summed over the group, scaled; -inf for a key past the split (every lane calls it).
template <int G>
__device__ inline float group_score(float4 q, float4 k, bool valid, float scale) {
  float t = valid ? q.x * k.x + q.y * k.y + q.z * k.z + q.w * k.w : 0.f;
#pragma unroll
  for (int o = G / 2; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
  return valid ? t * scale : -INFINITY;
}

template <int G, int W, typename T>
__device__ inline BlockPartial decode_block(const Attention& a, int64_t row, int64_t j0,
                                            int64_t j1) {
  constexpr int kGroups = 32 * W / G;
  const int64_t H = a.q.size[1], L = a.q.size[2];
  const int64_t Hk = a.k.size[1];
  // 32-bit division (decode_group keeps rows and heads below 2^31).
  const int64_t i = mod32(row, L), h = mod32(div32(row, L), H), b = div32(row, L * H);
  const int64_t hk = div32(h, div32(H, Hk));
  const int g = threadIdx.x / G, lane = threadIdx.x % G;
  const int d = lane * 4;
  const float scale = static_cast<float>(a.scale);
  const float4 q = ld4(reinterpret_cast<const T*>(a.q.data) + off4(a.q, b, h, i, d));
  const T* kb = reinterpret_cast<const T*>(a.k.data) + off4(a.k, b, hk, 0, d);
  const T* vb = reinterpret_cast<const T*>(a.v.data) + off4(a.v, b, hk, 0, d);
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
    for (int u = 0; u < kUnroll; ++u) s[u] = group_score<G>(q, kv[u], jb + u * kGroups < j1, scale);
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
  return merge_groups<G, W>(m, l, acc);
}

// out[b, h, i, 4t..4t+4) = o / L (0 when no key was seen; rounded to T), written by thread
// t < G.
template <typename T>
__device__ inline void store_row(const Attention& a, int64_t row, const float4& o, float lsum) {
  const int64_t H = a.q.size[1], L = a.q.size[2];
  const int64_t i = mod32(row, L), h = mod32(div32(row, L), H), b = div32(row, L * H);
  const float r = lsum > 0.f ? 1.f / lsum : 0.f;
  T* out = reinterpret_cast<T*>(a.out.data) + off4(a.out, b, h, i, threadIdx.x * 4);
  for (int t = 0; t < 4; ++t) store1(out + t * a.out.stride[3], (&o.x)[t] * r);
}

// Splits 0..active-1 of a row merged by thread t < G, from their running max M, sum L and
// unnormalised output o (split(sp) returns a BlockPartial: thread t's float4 of o), then the row
// stored: the cluster merge of attention.cu.
template <typename T, typename Split>
__device__ inline void merge_and_store(const Attention& a, int64_t row, int active, Split&& split) {
  float M = -FLT_MAX;
  for (int sp = 0; sp < active; ++sp) {
    const BlockPartial p = split(sp);
    if (p.l > 0.f) M = fmaxf(M, p.m);
  }
  float Lsum = 0.f;
  float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int sp = 0; sp < active; ++sp) {
    const BlockPartial p = split(sp);
    if (p.l == 0.f) continue;
    const float c = __expf(p.m - M);
    Lsum += p.l * c;
    o.x += p.o.x * c, o.y += p.o.y * c, o.z += p.o.z * c, o.w += p.o.w * c;
  }
  store_row<T>(a, row, o, Lsum);
}

// The splits active for S keys: one per min_keys keys, at most `splits`.
__device__ inline int active_splits(int64_t S, int min_keys, int splits) {
  const int active = static_cast<int>(div32(S + min_keys - 1, min_keys));
  return active < 1 ? 1 : (active > splits ? splits : active);
}

// The fast path's conditions; the group width (E / 4 lanes) or 0.
inline int decode_group(const Attention& a) {
  const int64_t E = a.q.size[3];
  if (a.has_mask || a.causal || E != a.v.size[3] || E % 4 != 0 || E / 4 > 32) return 0;
  const int G = static_cast<int>(E / 4);
  if ((G & (G - 1)) != 0) return 0;
  // Rows, heads and keys are placed in 32-bit arithmetic (div32).
  if (a.q.size[0] * a.q.size[1] * a.q.size[2] > INT32_MAX || a.k.size[2] > INT32_MAX - 4096)
    return 0;
  const DType t = a.q.dtype;
  if (t != DType::kFloat32 && t != DType::kBFloat16 && t != DType::kFloat16) return 0;
  for (const Operand* o : {&a.q, &a.k, &a.v, &a.out}) {
    // Four elements a lane in one load: 16 bytes at float32, 8 at a half type.
    if (o->dtype != t || reinterpret_cast<uintptr_t>(o->data) % (4 * dtype_size(t)) != 0) return 0;
    if (o != &a.out && o->stride[3] != 1) return 0;
    for (int d = 0; d < 3; ++d)
      if (o != &a.out && o->size[d] > 1 && o->stride[d] % 4 != 0) return 0;
  }
  return G;
}

}  // namespace inplace::cuda::decode
