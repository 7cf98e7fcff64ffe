// Device code shared by the half GEMV's kernels (gemv_half.cu): chunk loads, the norm's input as
// the chain rounds it, column placement of the rotated prefix and the rotation of a column pair.
// Included by gemv_half.cu only.
#pragma once
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/gemv_device.cuh"
#include "kernels/cuda/gemv_half.h"
#include "kernels/cuda/layer_norm_device.cuh"

namespace inplace::cuda::half_gemv {

constexpr int kWarps = gemv::kWarpsPerBlock;

// Eight elements at p (16-byte aligned) as floats.
template <typename T>
__device__ inline void load8(const T* p, float* out) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const T* v = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = to_f(v[i]);
}

// Element k of the norm's float32 weight: norm_w's, or 1 + norm_w's (norm_one_plus: the chain's
// float32 add, norm_w of T or float32).
template <typename T>
__device__ inline float float_norm_weight(const GemvHalf& g, int64_t k) {
  const float w = g.norm_w_float ? static_cast<const float*>(g.norm_w)[k]
                                 : to_f(static_cast<const T*>(g.norm_w)[k]);
  return g.norm_one_plus ? __fadd_rn(1.f, w) : w;
}

template <typename T>
__device__ inline void widen(const uint4& raw, float* out) {
  const T* v = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = to_f(v[i]);
}

// x[k, k + 8) as the product reads it: normalised and rounded as upcast_rms_norm when kNorm.
template <typename T, bool kNorm>
__device__ inline void input8(const GemvHalf& g, const T* x, int64_t k, float inv, float* out) {
  load8(x + k, out);
  if constexpr (kNorm) {
    if (g.norm_w_float || g.norm_one_plus) {
#pragma unroll
      for (int i = 0; i < 8; ++i)
        out[i] = to_f(from_f<T>(out[i] * inv * float_norm_weight<T>(g, k + i)));
    } else {
      float nw[8];
      load8(static_cast<const T*>(g.norm_w) + k, nw);
#pragma unroll
      for (int i = 0; i < 8; ++i) out[i] = to_f(from_f<T>(nw[i] * to_f(from_f<T>(out[i] * inv))));
    }
  }
}

// x[k, k + 8) (or the floats `in` already loaded from there) normalised as layer_norm with the
// row's mean and 1 / sqrt(var + eps) as floats: ((x - mean) * rstd) * w + b in float, each op
// rounded on its own (__f*_rn: no contraction), rounded to T as the norm hands it over; norm_w
// and norm_b (when given) of T, read 16 bytes at a time. The cpu's kernel computes it in double:
// the two agree up to the rounding of that last T.
template <typename T>
__device__ inline void layer_normed8(const GemvHalf& g, int64_t k, float mean, float rstd,
                                     const float* in, float* out) {
  float w[8], b[8];
  load8(static_cast<const T*>(g.norm_w) + k, w);
  if (g.norm_b) {
    load8(static_cast<const T*>(g.norm_b) + k, b);
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) b[i] = 0.f;
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float h = __fmul_rn(__fsub_rn(in[i], mean), rstd);
    out[i] = to_f(from_f<T>(g.norm_b ? __fadd_rn(__fmul_rn(h, w[i]), b[i]) : __fmul_rn(h, w[i])));
  }
}
template <typename T>
__device__ inline void layer_input8(const GemvHalf& g, const T* x, int64_t k, float mean,
                                    float rstd, float* out) {
  float v[8];
  load8(x + k, v);
  layer_normed8<T>(g, k, mean, rstd, v, out);
}

// The row's mean and 1 / sqrt(var + eps) as floats from the LayerNorm statistics in double
// (layer_norm_device.cuh's row_stats: two passes over the row, by one warp).
template <typename T>
__device__ inline void layer_stats(const GemvHalf& g, const T* x, float* mean, float* rstd) {
  double mu = 0, rs = 0;
  row_stats(x, g.k, g.layer_eps, &mu, &rs);
  *mean = static_cast<float>(mu);
  *rstd = static_cast<float>(rs);
}

// The norm's weights are constants: each thread asks L1 for its chunks before the wait for the
// previous kernel (prefetch_norm), so that normalising does not wait on memory after the barrier.
template <typename T, bool kLayer = false>
__device__ inline void prefetch_norm(const GemvHalf& g) {
  const int64_t bytes = g.norm_w_float ? 4 : 2;
  for (int64_t k = int64_t{threadIdx.x} * 8; k < g.k; k += int64_t{blockDim.x} * 8) {
    const char* w = static_cast<const char*>(g.norm_w) + k * bytes;
    prefetch_l1(w);
    if (g.norm_w_float) prefetch_l1(w + 16);
    if constexpr (kLayer)  // the LayerNorm's bias, of T
      if (g.norm_b) prefetch_l1(static_cast<const char*>(g.norm_b) + k * 2);
  }
}

// 1 / sqrt(mean(x^2) + eps) of the row x[0, k) by the whole block, as upcast_rms_norm computes
// it: each thread squares its 16-byte chunks (first = 8 * thread, step 8 * blockDim) in float and
// sums them in double in order, then the warp's butterfly, then the warps in order from shared
// memory (the same bits in every block); the mean rounded to float, + eps and 1 / sqrt in float
// (rsqrt as the cpu's kernel). Every thread calls it; a block barrier inside.
template <typename T>
__device__ inline float block_inv_rms(const T* x, int64_t k_total, float eps) {
  const int64_t first = int64_t{threadIdx.x} * 8, step = int64_t{blockDim.x} * 8;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __shared__ double part[kWarps];
  double sq = 0;
  for (int64_t k = first; k < k_total; k += step) {
    float v[8];
    load8(x + k, v);
#pragma unroll
    for (int i = 0; i < 8; ++i) sq += static_cast<double>(v[i] * v[i]);
  }
  for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
  if (lane == 0) part[warp] = sq;
  __syncthreads();
  double total = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) total += part[w];
  const float mean = static_cast<float>(total / static_cast<double>(k_total));
  return 1.0f / sqrtf(mean + eps);
}

// The joined norm step's row (GemvPreNorm): residual + upcast_rms_norm(pre.x) as the
// upcast_rms_norm kernel computes it (upcast_rms_norm.cu: the squares in float summed in double,
// the mean rounded to float, 1 / sqrt(mean + eps) in float, h = x * inv, the weight as the chain
// applies it, the residual added at T), into xs[0, k) by the block, each thread its chunks first,
// first + step, ...; block 0 also stores it into x (the norm step's result, read by later steps).
// Ends with a block barrier. (The sum of float squares in double is exact unless the squares span
// more than 29 binary orders of magnitude: its order shows in no result.)
template <typename T>
__device__ inline void pre_norm_row(const GemvHalf& g, T* xs) {
  const GemvPreNorm& p = g.pre;
  const T* o = static_cast<const T*>(p.x);
  const T* r = static_cast<const T*>(p.residual);
  const int64_t first = int64_t{threadIdx.x} * 8, step = int64_t{blockDim.x} * 8;
  const float inv = block_inv_rms(o, g.k, p.eps);
  T* out = blockIdx.x == 0 ? static_cast<T*>(const_cast<void*>(g.x)) : nullptr;
  for (int64_t k = first; k < g.k; k += step) {
    float v[8], rv[8];
    load8(o + k, v);
    if (r) load8(r + k, rv);
    alignas(16) T y[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float h = v[i] * inv;
      T t;
      if (p.in_float) {
        float w = p.w_float ? static_cast<const float*>(p.w)[k + i]
                            : to_f(static_cast<const T*>(p.w)[k + i]);
        if (p.offset != 0.f) w = __fadd_rn(w, p.offset);  // the chain's add, in float
        t = from_f<T>(__fmul_rn(h, w));
      } else {
        t = from_f<T>(to_f(static_cast<const T*>(p.w)[k + i]) * to_f(from_f<T>(h)));
      }
      y[i] = r ? from_f<T>(__fadd_rn(rv[i], to_f(t))) : t;
    }
    *reinterpret_cast<uint4*>(xs + k) = *reinterpret_cast<const uint4*>(y);
    if (out) *reinterpret_cast<uint4*>(out + k) = *reinterpret_cast<const uint4*>(y);
  }
  __syncthreads();
}

// The input row as the product reads it, into xs[0, k) as T, by the whole block (every thread
// calls it; it ends with a block barrier): each thread takes the 16-byte chunks first, first +
// step, ... (first = 8 * thread), so that the row's statistics are summed in one order in every
// block. kNorm: normalised and rounded as upcast_rms_norm hands it over (1 / sqrt(mean + eps),
// the float squares summed in double: each thread its chunks in order, then the warp's
// butterfly, then the warps in order). kLayer: as layer_norm, with the row's mean and then the
// mean of the squared deviations from it (two passes, no cancellation) in float, each op rounded
// on its own, a thread's chunks, the warp's butterfly and the warps in the same orders, then
// ((x - mean) * rstd) * w + b in float (layer_normed8; the cpu's layer_norm takes the statistics
// in double: the normalised values agree up to the rounding of the T they are handed over as).
// Normalising once a block rather than once a warp was most of GPT-2's c_attn and c_fc.
template <typename T, bool kNorm, bool kLayer = false>
__device__ inline void stage_row(const GemvHalf& g, T* xs) {
  const T* x = static_cast<const T*>(g.x);
  if constexpr (kNorm && !kLayer) {
    if (g.pre.x) {  // the row is the joined norm step's, normalised again below from xs
      pre_norm_row<T>(g, xs);
      x = xs;
    }
  }
  const int64_t first = int64_t{threadIdx.x} * 8, step = int64_t{blockDim.x} * 8;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if constexpr (kLayer) {
    __shared__ float part[2][kWarps];
    auto row_mean = [&](int which, auto term) {
      float sum = 0.f;
      for (int64_t k = first; k < g.k; k += step) {
        float v[8];
        load8(x + k, v);
#pragma unroll
        for (int i = 0; i < 8; ++i) sum = __fadd_rn(sum, term(v[i]));
      }
      sum = warp_sum(sum);
      if (lane == 0) part[which][warp] = sum;
      __syncthreads();
      float total = 0.f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) total = __fadd_rn(total, part[which][w]);
      return __fdiv_rn(total, static_cast<float>(g.k));
    };
    const float mean = row_mean(0, [](float e) { return e; });
    const float var = row_mean(1, [&](float e) {
      const float d = __fsub_rn(e, mean);
      return __fmul_rn(d, d);
    });
    const float rstd = __fdiv_rn(1.f, __fsqrt_rn(__fadd_rn(var, static_cast<float>(g.layer_eps))));
    for (int64_t k = first; k < g.k; k += step) {
      float v[8];
      layer_input8<T>(g, x, k, mean, rstd, v);
      alignas(16) T out[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) out[i] = from_f<T>(v[i]);
      *reinterpret_cast<uint4*>(xs + k) = *reinterpret_cast<const uint4*>(out);
    }
    __syncthreads();
    return;
  }
  float inv = 1.f;
  if constexpr (kNorm) inv = block_inv_rms(x, g.k, g.eps);
  for (int64_t k = first; k < g.k; k += step) {
    if constexpr (kNorm) {
      float v[8];
      input8<T, true>(g, x, k, inv, v);
      alignas(16) T out[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) out[i] = from_f<T>(v[i]);
      *reinterpret_cast<uint4*>(xs + k) = *reinterpret_cast<const uint4*>(out);
    } else {
      *reinterpret_cast<uint4*>(xs + k) = *reinterpret_cast<const uint4*>(x + k);
    }
  }
  __syncthreads();
}

// Column `c` of block `block`, a block holding `per_block` columns: a block of the rotated prefix
// takes per_block / 2 column pairs (j, j + d/2) of one head (both halves of each rotation in the
// block, partners per_block / 2 apart), every other block per_block columns in order.
// In 32-bit arithmetic (gemv_half keeps n below 2^31): a 64-bit division is a long subroutine
// on the path to the column's first fetch.
__device__ inline int64_t column_of(const GemvHalf& g, int64_t block, int c, int per_block,
                                    bool rot_block) {
  if (!rot_block) return block * per_block + c;
  const uint32_t pairs = static_cast<uint32_t>(per_block) / 2, b = static_cast<uint32_t>(block);
  const uint32_t half = static_cast<uint32_t>(g.rot_d) / 2, per_head = half / pairs;
  const uint32_t cu = static_cast<uint32_t>(c);
  return static_cast<int64_t>(b / per_head) * g.rot_d + (b % per_head) * pairs + cu % pairs +
         (cu >= pairs ? half : 0);
}

// Column n's place j in its rotated head (n < 2^31).
__device__ inline int64_t rotary_place(const GemvHalf& g, int64_t n) {
  return mod32(n, g.rot_d);
}

// v (column n's rounded result, held by lane 0 of the column's `owner` warp) rotated as
// rotary_embedding at T by cos[j] = c, sin[j] = s, its partner the block's column c ^ pairs:
// every warp of a rotated block calls it (all its columns exist); the owner's lane 0 gets the
// result.
template <typename T>
__device__ inline T rotate(const GemvHalf& g, T v, int64_t n, int col, int pairs, bool owner,
                           float c, float s) {
  __shared__ float pair[kWarps];
  const int lane = threadIdx.x % 32;
  if (owner && lane == 0) pair[col] = to_f(v);
  __syncthreads();
  if (owner && lane == 0) {
    const int64_t half = g.rot_d / 2, j = rotary_place(g, n);
    const float other = pair[col ^ pairs];
    const float rot = j < half ? -other : other;
    const float a = to_f(from_f<T>(__fmul_rn(to_f(v), c)));
    const float b = to_f(from_f<T>(__fmul_rn(rot, s)));
    v = from_f<T>(__fadd_rn(a, b));
  }
  __syncthreads();  // `pair` is rewritten for the next row
  return v;
}

}  // namespace inplace::cuda::half_gemv
