// A LayerNorm's row statistics and normalised values as the cpu's layer_norm computes them (mean
// and variance in double, ((x - mean) * rstd) * w + b in double without fused multiply-adds,
// rounded to T), for kernels that normalise the rows they read: the [in, out] GEMV
// (gemv_in_out.cu) normalises with `normed`; the half GEMV's LayerNorm form takes row_stats
// (gemv_half_device.cuh normalises in float). Each warp computes a row's statistics on its own,
// the same bits in every warp and block.
#pragma once
#include "kernels/cuda/device_common.cuh"

namespace inplace::cuda {

// v rounded to T and back (the chain's rounding of an intermediate to its dtype).
template <typename T>
__device__ inline float rounded(float v) {
  return to_f(from_f<T>(v));
}

// The sum of v over a warp, the same bits in every lane: each step of the butterfly adds the
// same two values in both lanes of a pair.
__device__ inline double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// The row's elements as 16-byte chunks of kChunk: chunk i is elements [i * kChunk, (i + 1) *
// kChunk) (the last one partial where K is not a multiple), lane l of a warp takes chunks l,
// l + 32, ... Chunk i's elements in order, as floats, to f(k, v): one 16-byte load where the
// row allows it, else element by element; the same elements in the same order either way.
template <typename T, typename F>
__device__ inline void for_lane_chunks(const T* xr, int64_t K, bool vector, F&& f) {
  constexpr int kChunk = 16 / sizeof(T);
  const int lane = threadIdx.x % 32;
  const int64_t chunks = (K + kChunk - 1) / kChunk;
#pragma unroll 4
  for (int64_t i = lane; i < chunks; i += 32) {
    const int64_t k0 = i * kChunk;
    if (vector && k0 + kChunk <= K) {
      const uint4 raw = *reinterpret_cast<const uint4*>(xr + k0);
      const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int j = 0; j < kChunk; ++j) f(to_f(e[j]));
    } else {
      for (int64_t k = k0; k < K && k < k0 + kChunk; ++k) f(to_f(xr[k]));
    }
  }
}

// The LayerNorm's mean and 1 / sqrt(var + eps) of one row, in double as the cpu kernel, by one
// warp: each lane sums its chunks' elements (for_lane_chunks) in order, then the butterfly.
// Every warp of every block that calls it gets the same bits, with no block barrier (a block's
// warps need not wait for one another, and the blocks of a launch normalise alike), whether the
// row is read in 16-byte loads or not.
template <typename T>
__device__ inline void row_stats(const T* xr, int64_t K, double eps, double* mu, double* rs) {
  const bool vector = reinterpret_cast<uintptr_t>(xr) % 16 == 0;
  double s = 0;
  for_lane_chunks(xr, K, vector, [&](float v) { s = __dadd_rn(s, static_cast<double>(v)); });
  const double mean = warp_sum(s) / static_cast<double>(K);
  double q = 0;
  for_lane_chunks(xr, K, vector, [&](float v) {
    const double d = __dsub_rn(static_cast<double>(v), mean);
    q = __dadd_rn(q, __dmul_rn(d, d));
  });
  *mu = mean;
  *rs = 1.0 / sqrt(warp_sum(q) / static_cast<double>(K) + eps);
}

// x normalised as the cpu's layer_norm: ((x - mu) * rs) * w + b in double (w and b where the
// norm has them), rounded to T.
template <typename T>
__device__ inline float normed(T x, double mu, double rs, bool has_w, T w, bool has_b, T b) {
  double v = __dmul_rn(__dsub_rn(static_cast<double>(to_f(x)), mu), rs);
  if (has_w) v = __dmul_rn(v, static_cast<double>(to_f(w)));
  if (has_b) v = __dadd_rn(v, static_cast<double>(to_f(b)));
  return rounded<T>(static_cast<float>(v));
}
template <typename T>
__device__ inline float normed(T x, double mu, double rs, const T* w, const T* b, int64_t k) {
  return normed(x, mu, rs, w != nullptr, w ? w[k] : T(), b != nullptr, b ? b[k] : T());
}

}  // namespace inplace::cuda
