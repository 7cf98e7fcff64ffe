// The one-row half GEMV by column blocks (gemv_half.cu picks it for products of fewer weight
// bytes, where its shorter path to the first result wins): one warp or a few (split) a column,
// the grid resident, each lane holding kUnroll 16-byte chunks of a weight row. Included by
// gemv_half.cu only.
#pragma once
#include "kernels/cuda/gate_act.cuh"
#include "kernels/cuda/gelu_new_device.cuh"
#include "kernels/cuda/gemv_half_device.cuh"
#include "kernels/cuda/layer_norm_device.cuh"

namespace inplace::cuda::half_gemv {

constexpr int kUnroll = 4;

// Chunks k0, k0 + step, ... (kUnroll of them, those below k) of weight row w, and of w2 when
// given, into registers: 16-byte loads with the streaming hint. The same loads as
// gemv::fetch_chunks, kept apart on purpose: calling that one instead changed this kernel's
// SASS (with that change a medium Llama step read 0.338 against 0.305 ms; see
// docs/performance-history.md).
template <typename T, bool kTwo>
__device__ inline void fetch_rows(uint4 (&raw)[kUnroll], uint4 (&raw2)[kUnroll], const T* w,
                                  const T* w2, int64_t k0, int64_t step, int64_t k) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t c = k0 + step * u;
    if (c < k) {
      raw[u] = __ldcs(reinterpret_cast<const uint4*>(w + c));
      if constexpr (kTwo) raw2[u] = __ldcs(reinterpret_cast<const uint4*>(w2 + c));
    }
  }
}

// 1 / sqrt(mean(x^2) + eps) of the row x[0, k) as upcast_rms_norm computes it (squares in float,
// summed in double), by one warp on its own: every lane reads its 16-byte chunks, then a
// butterfly. Every warp of a block computes the same value (same order), so no block barrier.
template <typename T>
__device__ inline float warp_inv_rms(const GemvHalf& g, const T* x) {
  const int lane = threadIdx.x % 32;
  double sq = 0;
  for (int64_t k = lane * 8; k < g.k; k += 256) {
    float v[8];
    load8(x + k, v);
#pragma unroll
    for (int i = 0; i < 8; ++i) sq += static_cast<double>(v[i] * v[i]);
  }
  for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
  const float mean = static_cast<float>(sq / static_cast<double>(g.k));
  return 1.0f / sqrtf(mean + g.eps);
}

// A LayerNorm form's cached input (a row fetched whole) where the row is longer than a block
// normalises at once (block_normed): this lane's chunks of x (k0 = first, first + step, ...) loaded
// once into xc, the row's statistics from the row in memory (row_stats, in double, by each warp),
// then xc normalised in place (layer_normed8).
template <typename T>
__device__ inline void layer_cached(const GemvHalf& g, const T* x, int64_t first, int64_t step,
                                    float* xc) {
  const int64_t K = g.k;
  float mean = 0.f, rstd = 1.f;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u)
    if (first + step * u < K) load8(x + first + step * u, xc + 8 * u);
  layer_stats<T>(g, x, &mean, &rstd);
#pragma unroll
  for (int u = 0; u < kUnroll; ++u)
    if (first + step * u < K)
      layer_normed8<T>(g, first + step * u, mean, rstd, xc + 8 * u, xc + 8 * u);
}

// Rows a block normalises in shared memory (block_normed): one 16-byte chunk a thread.
constexpr int64_t kBlockNormK = int64_t{8} * 32 * kWarps;

// A cached input (a row fetched whole, k <= kBlockNormK) normalised once a block (stage_row,
// into shared memory as T), then each warp's chunks (first, first + step, ...) into xc.
template <typename T, bool kLayer>
__device__ inline void block_normed(const GemvHalf& g, int64_t first, int64_t step, float* xc) {
  __shared__ __align__(16) T xs[kBlockNormK];
  stage_row<T, true, kLayer>(g, xs);
#pragma unroll
  for (int u = 0; u < kUnroll; ++u)
    if (first + step * u < g.k) load8(xs + first + step * u, xc + 8 * u);
}

// The decode step's product (one input row, the 16-byte path), as a grid that stays resident:
// block b of the product's column blocks (g.split warps a column, 8 / split columns a block; a
// rotated block takes column pairs of one head) is done by launch block b % gridDim.x, in turn.
// Each lane holds kUnroll 16-byte chunks of a weight row (split chosen so that a row of
// k <= 1024 * split is fetched whole), and fetches the next column's chunks before it sums the
// current one, so the weight stream never waits on an epilogue (kAhead2, one weight, a row
// fetched whole: the next two columns', so that more bytes are in flight). The first fetches are
// issued before the wait for the previous kernel (the weights are constants). After the wait
// the norm is summed once (by the block, kBlockNorm, or by each warp on its own), and (kCached:
// a row fetched whole) each warp keeps its part of x, normalised and rounded as the chain's norm
// hands it over, in registers for every column. Split warps' sums meet in shared memory in a fixed
// order. kLayer (with kNorm): the norm is a LayerNorm. kBlockNorm (a norm, a row fetched whole, k
// <= kBlockNormK): the block normalises the row once (block_normed) instead of each warp
// (warp_inv_rms, or the LayerNorm's row_stats).
template <typename T, GemvEpilogue kE, bool kNorm, bool kCached, bool kAhead2, bool kLayer = false,
          bool kBlockNorm = false>
__global__ void __launch_bounds__(32 * kWarps, 2) gemv_half_columns_kernel(GemvHalf g) {
  constexpr bool kTwo = kE == GemvEpilogue::kSwiGLU;
  pdl_trigger();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, split = g.split, part = warp % split;
  const int64_t K = g.k, step = int64_t{256} * split, first = (int64_t{part} * 32 + lane) * 8;
  const uint32_t columns = kWarps / split;  // 32-bit division (n < 2^31), before the first fetch
  const int64_t blocks = (static_cast<uint32_t>(g.n) + columns - 1) / columns;
  const int64_t rot_blocks =
      kE == GemvEpilogue::kNone ? static_cast<uint32_t>(g.rot_cols) / columns : 0;
  auto column = [&](int64_t b) {
    return column_of(g, b, warp / split, static_cast<int>(columns), b < rot_blocks);
  };
  const T* x = static_cast<const T*>(g.x);
  // kDeep: one weight whose row is fetched whole: two columns ahead in flight, not one (the
  // registers of a second weight hold a third column instead).
  constexpr bool kDeep = kAhead2 && kCached && !kTwo;
  uint4 raw[kUnroll], raw2[kUnroll], next[kUnroll], next2[kUnroll], ahead[kUnroll];
  auto fetch = [&](uint4(&r)[kUnroll], uint4(&r2)[kUnroll], int64_t n, int64_t k0) {
    const T* w = weight_row<T>(g.w, g.more, n, K);
    const T* w2 = kTwo ? static_cast<const T*>(g.w2) + n * K : nullptr;
    fetch_rows<T, kTwo>(r, r2, w, w2, k0, step, K);
  };
  auto column_at = [&](int64_t b) { return b < blocks ? column(b) : g.n; };
  int64_t b = blockIdx.x;
  int64_t n = column(b);
  int64_t nn = column_at(b + gridDim.x);  // kDeep: fetched into `next` ahead of the loop
  if (n < g.n) fetch(raw, raw2, n, first);
  if constexpr (kDeep)
    if (nn < g.n) fetch(next, next2, nn, first);
  if constexpr (kBlockNorm || kLayer) prefetch_norm<T, kLayer>(g);
  pdl_wait();
  // The row writes' places, read once where one position serves every head.
  gemv::RowPlaces place;
  if constexpr (kE == GemvEpilogue::kNone)
    place = gemv::row_places<1>(g.writes, g.n_writes, blockIdx.x == 0 && threadIdx.x == 0);
  const float inv = kNorm && !kLayer && !kBlockNorm ? warp_inv_rms<T>(g, x) : 1.f;
  float mean = 0.f, rstd = 1.f;  // kLayer's
  float xc[kCached ? kUnroll * 8 : 1];
  if constexpr (kCached && kBlockNorm) {
    block_normed<T, kLayer>(g, first, step, xc);
  } else if constexpr (kLayer && kCached) {
    layer_cached<T>(g, x, first, step, xc);
  } else if constexpr (kLayer) {
    layer_stats<T>(g, x, &mean, &rstd);
  } else if constexpr (kCached) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (first + step * u < K) input8<T, kNorm>(g, x, first + step * u, inv, xc + 8 * u);
  }
  for (; b < blocks; b += gridDim.x) {
    const bool active = n < g.n, rot_block = b < rot_blocks;
    // The next column's first chunks (kDeep: the one after), before this one is summed.
    if constexpr (kDeep) {
      const int64_t n3 = column_at(b + 2 * int64_t{gridDim.x});
      if (n3 < g.n) fetch(ahead, next2, n3, first);
    } else {
      nn = column_at(b + gridDim.x);
      if (nn < g.n) fetch(next, next2, nn, first);
    }
    float bias = 0.f, residual = 0.f, c = 1.f, s = 0.f;
    T* target[2] = {nullptr, nullptr};
    if (active && part == 0 && lane == 0) {
      if (const T* b = bias_at<T>(g.bias, g.more, n)) bias = to_f(*b);
      if constexpr (kE == GemvEpilogue::kResidual)
        residual = to_f(static_cast<const T*>(g.residual)[n]);
      if constexpr (kE == GemvEpilogue::kNone) {
        if (rot_block) {
          const int64_t j = rotary_place(g, n);
          c = to_f(static_cast<const T*>(g.cos)[j]);
          s = to_f(static_cast<const T*>(g.sin)[j]);
        }
        if (g.n_writes > 0) target[0] = gemv::row_target<T>(g.writes[0], n, place.first);
        if (g.n_writes > 1) target[1] = gemv::row_target<T>(g.writes[1], n, place.second);
      }
    }
    float acc = 0.f, acc2 = 0.f;
    if (active) {
      for (int64_t k0 = first;;) {
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int64_t k = k0 + step * u;
          if (k >= K) break;
          float xv[8], wv[8];
          if constexpr (kCached) {
#pragma unroll
            for (int i = 0; i < 8; ++i) xv[i] = xc[8 * u + i];
          } else if constexpr (kLayer) {
            layer_input8<T>(g, x, k, mean, rstd, xv);
          } else {
            input8<T, kNorm>(g, x, k, inv, xv);
          }
          widen<T>(raw[u], wv);
#pragma unroll
          for (int i = 0; i < 8; ++i) acc += xv[i] * wv[i];
          if constexpr (kTwo) {
            widen<T>(raw2[u], wv);
#pragma unroll
            for (int i = 0; i < 8; ++i) acc2 += xv[i] * wv[i];
          }
        }
        k0 += step * kUnroll;
        if (kCached || k0 >= K) break;
        fetch(raw, raw2, n, k0);
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      acc += __shfl_xor_sync(0xffffffffu, acc, o);
      if constexpr (kTwo) acc2 += __shfl_xor_sync(0xffffffffu, acc2, o);
    }
    if (split > 1) {
      float sums[2] = {acc, acc2};
      gemv::combine_split(sums, warp, part, split);
      acc = sums[0], acc2 = sums[1];
    }
    T v = from_f<T>(0.f);
    if (active && part == 0 && lane == 0) {
      if (g.bias) acc = acc + bias;
      v = from_f<T>(acc);
      if constexpr (kE == GemvEpilogue::kResidual) v = from_f<T>(residual + to_f(v));
      if constexpr (kTwo) {
        const float gate = to_f(v);
        const T sg = from_f<T>(gate_act(g.activation, gate));
        v = from_f<T>(to_f(sg) * to_f(from_f<T>(acc2)));
      }
      if constexpr (kE == GemvEpilogue::kGeluNew) v = from_f<T>(gelu_new<T>(g.gelu, to_f(v)));
    }
    if (rot_block)
      v = rotate<T>(g, v, n, warp / split, static_cast<int>(columns / 2), part == 0, c, s);
    if (active && part == 0 && lane == 0) {
      static_cast<T*>(g.y)[n] = v;
      if (target[0]) *target[0] = v;
      if (target[1]) *target[1] = v;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      raw[u] = next[u];
      if constexpr (kTwo) raw2[u] = next2[u];
      if constexpr (kDeep) next[u] = ahead[u];
    }
    n = nn;
    if constexpr (kDeep) nn = column_at(b + 2 * int64_t{gridDim.x});
  }
}

// Warps a column on the one-row path: enough that each lane fetches at most kUnroll 16-byte
// chunks of a weight row (all of it before the wait for the previous kernel), at most a block;
// where the block's columns are rotated, at most half a block (a block holds whole column pairs).
// The cache writes do not change it, nor does the rotation up to k = 4096 (a q/k/v product's sums
// are then those of the same product unrotated, bitwise).
inline int32_t column_split(const GemvHalf& g) {
  const int64_t chunks = g.k / 8;
  const int32_t most = g.rot_cols > 0 ? kWarps / 2 : kWarps;
  int32_t split = 1;
  while (split < most && chunks > int64_t{32} * kUnroll * split) split *= 2;
  return split;
}

}  // namespace inplace::cuda::half_gemv
