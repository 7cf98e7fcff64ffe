// The decode GEMV with a bfloat16 weight, as device code: one warp per output column, 16-byte
// streaming loads of the weight row (eight bf16 at a time, kUnroll of them issued before any is
// used, so a warp keeps several kilobytes in flight), up to kRows input rows per pass of the
// row, float32 accumulation, a warp reduction, then the epilogue (bias, a residual add, or
// a gated MLP's second product with act * mul). Memory-bound at one token: each weight is read
// once. With an RMSNorm prologue the block first sums the squares of its input rows (a few
// kilobytes, from L2) and every warp normalises x as it reads it. Included by fused_linear.cu (one
// launch a product).
#pragma once
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/device_runtime.h"
#include "kernels/cuda/gate_act.cuh"

namespace inplace::cuda::gemv {

// Input rows per pass over a weight row: one at a decode step (fewer registers, so three blocks
// fit an SM and the largest products run in one wave), up to four otherwise.
constexpr int kRows = 4;
static_assert(kRows == kGemvRows, "launch.h's kGemvRows (the backend's decode rows) is kRows");
constexpr int kWarpsPerBlock = 8;
constexpr int kUnroll = 4;

__device__ inline void widen8(const uint4& raw, float* wf) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    const float2 f = __bfloat1622float2(h[t]);
    wf[2 * t] = f.x;
    wf[2 * t + 1] = f.y;
  }
}

__device__ inline float4 scaled(float4 v, float inv, float4 g) {
  return make_float4(v.x * inv * g.x, v.y * inv * g.y, v.z * inv * g.z, v.w * inv * g.w);
}

// (a, b) . wf.
__device__ inline float dot8(float4 a, float4 b, const float* wf) {
  return a.x * wf[0] + a.y * wf[1] + a.z * wf[2] + a.w * wf[3] + b.x * wf[4] + b.y * wf[5] +
         b.z * wf[6] + b.w * wf[7];
}

// x[0..8) . wf, x normalised first when kNorm ((x * inv) * g, as the rms_norm kernel).
template <bool kNorm>
__device__ inline float dot8(const float* x, const float* wf, float inv = 1.f,
                             const float* g = nullptr) {
  float4 a = reinterpret_cast<const float4*>(x)[0], b = reinterpret_cast<const float4*>(x)[1];
  if constexpr (kNorm) {
    a = scaled(a, inv, reinterpret_cast<const float4*>(g)[0]);
    b = scaled(b, inv, reinterpret_cast<const float4*>(g)[1]);
  }
  return a.x * wf[0] + a.y * wf[1] + a.z * wf[2] + a.w * wf[3] + b.x * wf[4] + b.y * wf[5] +
         b.z * wf[6] + b.w * wf[7];
}

// inv[r] = rsqrt(mean_k(x[m0 + r, k]^2) + eps) for the pass's rows, summed by the whole block:
// each thread reads a few elements of each row (one float4 of a 1024-long row), then one shared
// step. Every thread of the block calls it and gets every row's value.
template <bool kVector, int R>
__device__ inline void block_inv_rms(const GemvBf16& g, int64_t m0, float* inv) {
  __shared__ float part[kWarpsPerBlock][R];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t K = g.k;
  float sq[R] = {};
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (m0 + r >= g.rows) break;
    const float* xr = g.x + (m0 + r) * g.x_stride;
    if constexpr (kVector) {
      for (int64_t k = threadIdx.x * 4; k < K; k += blockDim.x * 4) {
        const float4 v = *reinterpret_cast<const float4*>(xr + k);
        sq[r] += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
      }
    } else {
      for (int64_t k = threadIdx.x; k < K; k += blockDim.x) sq[r] += xr[k] * xr[k];
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    for (int o = 16; o > 0; o >>= 1) sq[r] += __shfl_xor_sync(0xffffffffu, sq[r], o);
    if (lane == 0) part[warp][r] = sq[r];
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < R; ++r) {
    float total = 0.f;
    for (int w = 0; w < kWarpsPerBlock; ++w) total += part[w][r];
    inv[r] = rsqrtf(total / static_cast<float>(K) + g.eps);
  }
  __syncthreads();  // `part` is reused by the next pass
}

// The rotary epilogue of a block of column pairs: column n (at j = n mod d within its head)
// becomes res * cos[j] + rotate_half * sin[j], its partner column's result exchanged through
// shared memory; the rotary kernel's float operations in its order. c and s are cos[j] and
// sin[j], read by the caller (the one-row path requests them before its product). Every warp of
// the block calls it (all its columns exist).
template <int R>
__device__ inline void rotate(const GemvBf16& g, float* res, int64_t m0, int64_t n, int warp,
                              float c, float s) {
  __shared__ float pair[R][kWarpsPerBlock];
  if (threadIdx.x % 32 == 0)
#pragma unroll
    for (int r = 0; r < R; ++r) pair[r][warp] = res[r];
  __syncthreads();
  const int64_t half = g.rot_d / 2, j = n % g.rot_d;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (m0 + r >= g.rows) break;
    const float other = pair[r][warp ^ 4];
    const float rot = j < half ? -other : other;
    const float a = res[r] * c;
    const float b = rot * s;
    res[r] = a + b;
  }
  __syncthreads();  // `pair` is reused by the next pass
}

// Chunks k0, k0 + step, ... (kUnroll of them, those below K) of weight row wr, and of wr2 for
// SwiGLU's second weight, into registers: 16-byte loads with the streaming hint.
template <bool kTwo>
__device__ inline void fetch_chunks(uint4 (&raw)[kUnroll], uint4 (&raw2)[kUnroll],
                                    const __nv_bfloat16* wr, const __nv_bfloat16* wr2, int64_t k0,
                                    int64_t step, int64_t K) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t k = k0 + step * u;
    if (k < K) {
      raw[u] = __ldcs(reinterpret_cast<const uint4*>(wr + k));
      if constexpr (kTwo) raw2[u] = __ldcs(reinterpret_cast<const uint4*>(wr2 + k));
    }
  }
}

// The position row h of a row write goes to, wrapped where the write wraps negatives; outside
// [0, extent) when the write must refuse it.
__device__ inline int64_t row_position(const GemvRowWrite& w, int64_t h) {
  int64_t p = w.index ? load_at<int64_t>(w.index, w.index_dtype, h * w.index_stride) : w.number;
  if (w.wrap_negative && p < 0) p += w.extent;
  return p;
}

// Where the row write places column n's result (GemvRowWrite, elements of T), or null (also
// where the position is refused: report_row_writes flags that). The position is read here,
// before the product, so that its round trip overlaps the product's.
template <typename T = float>
__device__ inline T* row_target(const GemvRowWrite& w, int64_t n) {
  const int64_t c = n - w.col0;
  if (c < 0 || c >= w.cols) return nullptr;
  // 32-bit division (row_write_of keeps cols below 2^31): a 64-bit one is a long subroutine
  // on the path to the column's first fetch.
  const int64_t h = div32(c, w.d), j = mod32(c, w.d);
  const int64_t p = row_position(w, h);
  if (p < 0 || p >= w.extent) return nullptr;
  return static_cast<T*>(w.dst) + h * w.dst_stride + p * w.unit + j;
}

// Flags write w's refused position (the first flag of a call wins).
__device__ inline void flag_refused(const GemvRowWrite& w) {
  if (w.error && atomicCAS(w.error, 0, kDeviceErrorPosition) == 0) w.error[1] = w.error_step;
}

// A row write's place when one position serves every head (no index, or an index of stride 0,
// as a decode step's cache position): read once, checked, after the wait for the previous kernel;
// -1 where it is refused. kPlacePerHead where each head reads its own (then row_target reads it a
// column), or where the cache is too long for 32 bits.
constexpr int32_t kPlacePerHead = -2;
__device__ inline int32_t row_place(const GemvRowWrite& w) {
  if ((w.index && w.index_stride != 0) || w.extent > INT32_MAX) return kPlacePerHead;
  const int64_t p = row_position(w, 0);
  return p < 0 || p >= w.extent ? -1 : static_cast<int32_t>(p);
}

// row_target with the place row_place read: no load a column where one position serves all.
template <typename T>
__device__ inline T* row_target(const GemvRowWrite& w, int64_t n, int32_t place) {
  if (place == kPlacePerHead) return row_target<T>(w, n);
  const int64_t c = n - w.col0;
  if (place < 0 || c < 0 || c >= w.cols) return nullptr;
  const int64_t h = div32(c, w.d), j = mod32(c, w.d);
  return static_cast<T*>(w.dst) + h * w.dst_stride + int64_t{place} * w.unit + j;
}

// Flags the first refused position of the writes, in the order of their steps (the writes in
// order), as the standalone steps would: kLanes threads of the launch call it (the 32 lanes of
// one warp, or one thread), after the wait for the previous kernel, so which write is named never
// depends on which block runs first. With a warp, each lane reads every 32nd row's position: one
// round trip a write, not one a row (one thread's chain of loads held its block ~1 us behind the
// others). The column kernel and the multi-row fallback keep one thread: the warp's loop took
// the column kernel to its 128-register cap, with spills (ptxas -v).
template <int kLanes>
__device__ inline void report_row_writes(const GemvRowWrite* writes, int n_writes) {
  static_assert(kLanes == 1 || kLanes == 32, "one thread or one warp");
  const int lane = kLanes == 1 ? 0 : static_cast<int>(threadIdx.x % 32);
  for (int i = 0; i < n_writes; ++i) {
    const GemvRowWrite& w = writes[i];
    for (int64_t h0 = 0; h0 * w.d < w.cols; h0 += kLanes) {
      bool refused = false;
      if constexpr (kLanes == 1) {
        const int64_t p = row_position(w, h0);
        refused = p < 0 || p >= w.extent;
      } else {
        if ((h0 + lane) * w.d < w.cols) {
          const int64_t p = row_position(w, h0 + lane);
          refused = p < 0 || p >= w.extent;
        }
        refused = __any_sync(0xffffffffu, refused);
      }
      if (!refused) continue;
      if (lane == 0) flag_refused(w);
      return;
    }
  }
}

// The places of a product's two row writes at most (row_place's; -1 for a write it has not), as
// two scalars: an array of them lived in local memory (a stack frame, ptxas -v), and Llama's
// q/k/v product was 2% slower for it.
struct RowPlaces {
  int32_t first = -1, second = -1;
};

// Every warp calls it right after the wait for the previous kernel; the writes' refused positions
// are then flagged by the caller that `report` says (one thread or one warp of one block, kLanes
// as report_row_writes): where every write has one position from its place, without a load;
// where a write keeps a position a head, every write head by head (the same first refused write).
template <int kLanes>
__device__ inline RowPlaces row_places(const GemvRowWrite* writes, int n_writes, bool report) {
  RowPlaces at;
  if (n_writes > 0) at.first = row_place(writes[0]);
  if (n_writes > 1) at.second = row_place(writes[1]);
  if (!report) return at;
  if (at.first == kPlacePerHead || at.second == kPlacePerHead) {
    report_row_writes<kLanes>(writes, n_writes);
  } else if (threadIdx.x % 32 == 0) {
    if (at.first < 0 && n_writes > 0)
      flag_refused(writes[0]);
    else if (at.second < 0 && n_writes > 1)
      flag_refused(writes[1]);
  }
  return at;
}

// The sums v of the `split` warps of a column (warp - part the first) meet in shared memory, in
// that order, and every one of them gets the totals. Every warp of the block calls it (two block
// barriers: `sums` is read by all before any warp may write it again).
template <int N>
__device__ inline void combine_split(float (&v)[N], int warp, int part, int split) {
  __shared__ float sums[N][kWarpsPerBlock];
  if (threadIdx.x % 32 == 0)
#pragma unroll
    for (int i = 0; i < N; ++i) sums[i][warp] = v[i];
  __syncthreads();
  const int w0 = warp - part;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    v[i] = 0.f;
    for (int s = 0; s < split; ++s) v[i] += sums[i][w0 + s];
  }
  __syncthreads();
}

// Column n of a product of one input row, on the 16-byte path, by g.split warps (the row's
// 16-byte chunks dealt round-robin to their 32 * split lanes, kUnroll a lane per pass, so a row
// of k <= 1024 * split is fetched entirely before wait()). After the wait everything the
// epilogue reads that the product does not change (bias, residual, rotary factors, cache
// positions) is requested at once, so that no round trip follows another. With the norm, the
// lanes sum the squares of x as they read it (together they read all of x once) and the product
// is scaled by rsqrt(mean + eps) at the end: no separate pass over x. The split warps' sums meet
// in shared memory in a fixed order; every warp of the block calls this (split > 1 and the
// rotation synchronise the block).
template <GemvEpilogue kE, bool kNorm, typename Wait>
__device__ inline void gemv_one_row(const GemvBf16& g, int64_t n, bool active, bool rot_block,
                                    int warp, Wait&& wait) {
  constexpr bool kTwo = kE == GemvEpilogue::kSwiGLU;
  const int lane = threadIdx.x % 32, split = g.split, part = warp % split;
  const int64_t K = g.k, step = 256 * split;
  const int64_t first = (part * 32 + lane) * 8;
  const __nv_bfloat16* wr = weight_row<__nv_bfloat16>(g.w, g.more, n, K);
  const __nv_bfloat16* wr2 = kTwo ? static_cast<const __nv_bfloat16*>(g.w2) + n * K : nullptr;
  uint4 raw[kUnroll], raw2[kUnroll];
  auto fetch = [&](int64_t k0) { fetch_chunks<kTwo>(raw, raw2, wr, wr2, k0, step, K); };
  // The weights are constants: with a programmatic launch this fetch overlaps the previous
  // kernel.
  if (active) fetch(first);
  wait();
  float bias = 0.f, residual = 0.f, c = 1.f, s = 0.f;
  float *target0 = nullptr, *target1 = nullptr;  // GemvBf16::writes (two at most)
  if (active && part == 0) {
    if (const float* b = bias_at<float>(g.bias, g.more, n)) bias = *b;
    if constexpr (kE == GemvEpilogue::kResidual) residual = g.residual[n];
    if constexpr (kE == GemvEpilogue::kNone) {
      if (rot_block) {
        const int64_t j = n % g.rot_d;
        c = g.cos[j];
        s = g.sin[j];
      }
      if (g.n_writes > 0) target0 = row_target(g.writes[0], n);
      if (g.n_writes > 1) target1 = row_target(g.writes[1], n);
      if (n == 0) report_row_writes<32>(g.writes, g.n_writes);  // the warp of column 0
    }
  }
  float acc = 0.f, acc2 = 0.f, sq = 0.f;
  if (active) {
    for (int64_t k0 = first; k0 < K; k0 += step * kUnroll) {
      if (k0 != first) fetch(k0);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t k = k0 + step * u;
        if (k >= K) break;
        float4 a = reinterpret_cast<const float4*>(g.x + k)[0];
        float4 b = reinterpret_cast<const float4*>(g.x + k)[1];
        if constexpr (kNorm) {
          sq += a.x * a.x + a.y * a.y + a.z * a.z + a.w * a.w + b.x * b.x + b.y * b.y + b.z * b.z +
                b.w * b.w;
          a = scaled(a, 1.f, reinterpret_cast<const float4*>(g.norm_w + k)[0]);
          b = scaled(b, 1.f, reinterpret_cast<const float4*>(g.norm_w + k)[1]);
        }
        float wf[8];
        widen8(raw[u], wf);
        acc += dot8(a, b, wf);
        if constexpr (kTwo) {
          widen8(raw2[u], wf);
          acc2 += dot8(a, b, wf);
        }
      }
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if constexpr (kTwo) acc2 += __shfl_xor_sync(0xffffffffu, acc2, o);
    if constexpr (kNorm) sq += __shfl_xor_sync(0xffffffffu, sq, o);
  }
  if (split > 1) {
    float sums[3] = {acc, acc2, sq};
    combine_split(sums, warp, part, split);
    acc = sums[0], acc2 = sums[1], sq = sums[2];
    if (part != 0) return;
  }
  float v = acc, v2 = acc2;
  if constexpr (kNorm) {
    const float inv = rsqrtf(sq / static_cast<float>(K) + g.eps);
    v *= inv;
    v2 *= inv;
  }
  v = v + bias;
  if constexpr (kE == GemvEpilogue::kResidual) v = v + residual;
  // the activation as the unary kernel computes it (gate_act.cuh), then the mul.
  if constexpr (kTwo) v = gate_act(g.activation, v) * v2;
  float res[1] = {v};
  if constexpr (kE == GemvEpilogue::kNone)
    if (rot_block) rotate<1>(g, res, 0, n, warp, c, s);
  if (!active || lane != 0) return;
  g.y[n] = res[0];
  if (target0) *target0 = res[0];
  if (target1) *target1 = res[0];
}

// Block `block` of the product (kWarpsPerBlock columns): its first weight chunk is fetched, then
// wait() (called once by every thread) returns when the input may be read: a programmatic
// launch's wait in gemv_bf16_kernel.
template <GemvEpilogue kE, bool kVector, bool kNorm, int R, typename Wait>
__device__ inline void gemv_block(const GemvBf16& g, int64_t block, Wait&& wait) {
  constexpr bool kTwo = kE == GemvEpilogue::kSwiGLU;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // A block of the rotated prefix (kNone only) takes four column pairs (j, j + d/2) of one head,
  // so both halves of each rotation are in the block; every other block eight columns in order.
  const bool rot_block = kE == GemvEpilogue::kNone && block < g.rot_cols / kWarpsPerBlock;
  int64_t n = block * kWarpsPerBlock + warp;
  if (rot_block) {
    const int64_t half = g.rot_d / 2, per_head = half / 4;
    n = block / per_head * g.rot_d + block % per_head * 4 + (warp & 3) + (warp >= 4 ? half : 0);
  }
  // One row: g.split warps a column (only 1 where a block is rotated).
  if constexpr (kVector && R == 1) {
    if (!rot_block) n = block * (kWarpsPerBlock / g.split) + warp / g.split;
    return gemv_one_row<kE, kNorm>(g, n, n < g.n, rot_block, warp, wait);
  }
  // A warp past the last column still waits and takes its part in the block's norm.
  const bool active = n < g.n;
  const int64_t K = g.k;
  const __nv_bfloat16* wr = weight_row<__nv_bfloat16>(g.w, g.more, n, K);
  const __nv_bfloat16* wr2 = kTwo ? static_cast<const __nv_bfloat16*>(g.w2) + n * K : nullptr;
  uint4 raw[kUnroll], raw2[kUnroll];
  auto fetch = [&](int64_t k0) { fetch_chunks<kTwo>(raw, raw2, wr, wr2, k0, 256, K); };
  // The first chunk of the weight row is fetched before the wait for the previous kernel (its
  // bytes are constants): with a programmatic launch that fetch overlaps the previous kernel.
  if (kVector && active) fetch(lane * 8);
  wait();
  for (int64_t m0 = 0; m0 < g.rows; m0 += R) {
    float acc[R] = {}, acc2[R] = {};
    float inv[R];
#pragma unroll
    for (int r = 0; r < R; ++r) inv[r] = 1.f;
    if constexpr (kNorm) block_inv_rms<kVector, R>(g, m0, inv);
    if (!active) continue;
    if constexpr (kVector) {
      for (int64_t k0 = lane * 8; k0 < K; k0 += 256 * kUnroll) {
        if (m0 > 0 || k0 != lane * 8) fetch(k0);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int64_t k = k0 + 256 * u;
          if (k >= K) break;
          float wf[8], wf2[8];
          widen8(raw[u], wf);
          if constexpr (kTwo) widen8(raw2[u], wf2);
#pragma unroll
          for (int r = 0; r < R; ++r) {
            if (m0 + r >= g.rows) break;
            const float* xr = g.x + (m0 + r) * g.x_stride + k;
            acc[r] += dot8<kNorm>(xr, wf, inv[r], g.norm_w + k);
            if constexpr (kTwo) acc2[r] += dot8<kNorm>(xr, wf2, inv[r], g.norm_w + k);
          }
        }
      }
    } else {
      for (int64_t k = lane; k < K; k += 32) {
        const float wv = __bfloat162float(wr[k]);
        const float wv2 = kTwo ? __bfloat162float(wr2[k]) : 0.f;
        for (int r = 0; r < R; ++r)
          if (m0 + r < g.rows) {
            float xv = g.x[(m0 + r) * g.x_stride + k];
            if constexpr (kNorm) xv = xv * inv[r] * g.norm_w[k];
            acc[r] += xv * wv;
            if constexpr (kTwo) acc2[r] += xv * wv2;
          }
      }
    }
    float res[R] = {};
#pragma unroll
    for (int r = 0; r < R; ++r) {
      float v = acc[r], v2 = acc2[r];
      for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
        if constexpr (kTwo) v2 += __shfl_xor_sync(0xffffffffu, v2, o);
      }
      const int64_t m = m0 + r;
      if (m >= g.rows) break;
      if (const float* b = bias_at<float>(g.bias, g.more, n)) v = v + *b;
      if constexpr (kE == GemvEpilogue::kResidual) v = v + g.residual[m * g.residual_stride + n];
      // the activation as the unary kernel computes it (gate_act.cuh), then the mul.
      if constexpr (kTwo) v = gate_act(g.activation, v) * v2;
      res[r] = v;
    }
    if constexpr (kE == GemvEpilogue::kNone)
      if (rot_block) rotate<R>(g, res, m0, n, warp, g.cos[n % g.rot_d], g.sin[n % g.rot_d]);
    if (lane == 0)
#pragma unroll
      for (int r = 0; r < R; ++r)
        if (m0 + r < g.rows) g.y[(m0 + r) * g.y_stride + n] = res[r];
  }
}

}  // namespace inplace::cuda::gemv
