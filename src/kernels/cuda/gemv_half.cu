// The decode GEMV at a half activation dtype (gemv_half.h): one warp per output column, eight
// columns a block, lanes striding along k (16-byte loads of eight elements where k % 8 == 0 and
// the rows are aligned), float32 accumulation, a warp reduction, then the epilogue rounding to T
// where the chain rounds. With a norm, the block first normalises each input row into shared
// memory as T (the value the chain's norm hands the product), its squares summed in double.
// A block of the rotated prefix takes four column pairs (j, j + d/2) of one head and exchanges
// the partners' rounded results through shared memory; the row writes store the finished value.
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/gate_act.cuh"
#include "kernels/cuda/gemv_device.cuh"
#include "kernels/cuda/gemv_half.h"

namespace inplace::cuda {

namespace {

constexpr int kWarps = gemv::kWarpsPerBlock;  // combine_split's block

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

// Row m of x normalised as upcast_rms_norm does, into xn[0, k): every thread of the block calls
// it.
template <typename T>
__device__ inline void normalise_row(const GemvHalf& g, const T* xr, T* xn) {
  __shared__ double part[kWarps];
  __shared__ float inv_shared;
  double sq = 0;
  for (int64_t k = threadIdx.x; k < g.k; k += blockDim.x) {
    const float v = to_f(xr[k]);
    sq += static_cast<double>(v * v);  // pow(x, 2) in float32, summed in double by mean
  }
  for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = sq;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0;
    for (int w = 0; w < kWarps; ++w) total += part[w];
    const float mean = static_cast<float>(total / static_cast<double>(g.k));
    inv_shared = 1.0f / sqrtf(mean + g.eps);  // rsqrt as the cpu's kernel: 1 / sqrt
  }
  __syncthreads();
  const float inv = inv_shared;
  for (int64_t k = threadIdx.x; k < g.k; k += blockDim.x) {
    const float h = to_f(xr[k]) * inv;
    if (g.norm_w_float || g.norm_one_plus) {
      xn[k] = from_f<T>(h * float_norm_weight<T>(g, k));
    } else {
      const float w = to_f(static_cast<const T*>(g.norm_w)[k]);
      xn[k] = from_f<T>(w * to_f(from_f<T>(h)));
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

// The same, one warp a column (kWarps columns a block), cos[j] and sin[j] read here.
template <typename T>
__device__ inline T rotate(const GemvHalf& g, T v, int64_t n, int warp) {
  const int64_t j = rotary_place(g, n);
  const float c = to_f(static_cast<const T*>(g.cos)[j]);
  const float s = to_f(static_cast<const T*>(g.sin)[j]);
  return rotate<T>(g, v, n, warp, kWarps / 2, true, c, s);
}

template <typename T, GemvEpilogue kE, bool kVector, bool kNorm>
__global__ void __launch_bounds__(32 * kWarps) gemv_half_kernel(GemvHalf g) {
  constexpr bool kTwo = kE == GemvEpilogue::kSwiGLU;
  __shared__ __align__(16) T xn[kNorm ? kGemvHalfMaxNormK : 8];
  pdl_trigger();
  pdl_wait();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Block-uniform: the rotated prefix is whole blocks (rot_cols a multiple of rot_d, of 8).
  const bool rot_block = kE == GemvEpilogue::kNone && blockIdx.x < g.rot_cols / kWarps;
  const int64_t n = column_of(g, blockIdx.x, warp, kWarps, rot_block);
  const bool active = n < g.n;
  // The row writes' targets (one row), their positions read before the product.
  T* target[2] = {nullptr, nullptr};
  if (kE == GemvEpilogue::kNone && active && lane == 0)
    for (int i = 0; i < g.n_writes; ++i) target[i] = gemv::row_target<T>(g.writes[i], n);
  if (kE == GemvEpilogue::kNone && blockIdx.x == 0 && threadIdx.x == 0)
    gemv::report_row_writes(g.writes, g.n_writes);
  const T* w = weight_row<T>(g.w, g.more, active ? n : 0, g.k);
  const T* w2 = kTwo ? static_cast<const T*>(g.w2) + (active ? n : 0) * g.k : nullptr;
  for (int64_t m = 0; m < g.rows; ++m) {
    const T* xr = static_cast<const T*>(g.x) + m * g.x_stride;
    if constexpr (kNorm) {
      normalise_row<T>(g, xr, xn);
      xr = xn;
    }
    float acc = 0.f, acc2 = 0.f;
    if (active) {
      if constexpr (kVector) {
        for (int64_t k = lane * 8; k < g.k; k += 256) {
          float xv[8], wv[8];
          load8(xr + k, xv);
          load8(w + k, wv);
#pragma unroll
          for (int i = 0; i < 8; ++i) acc += xv[i] * wv[i];
          if constexpr (kTwo) {
            load8(w2 + k, wv);
#pragma unroll
            for (int i = 0; i < 8; ++i) acc2 += xv[i] * wv[i];
          }
        }
      } else {
        for (int64_t k = lane; k < g.k; k += 32) {
          const float xv = to_f(xr[k]);
          acc += xv * to_f(w[k]);
          if constexpr (kTwo) acc2 += xv * to_f(w2[k]);
        }
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      acc += __shfl_xor_sync(0xffffffffu, acc, o);
      if constexpr (kTwo) acc2 += __shfl_xor_sync(0xffffffffu, acc2, o);
    }
    T v = from_f<T>(0.f);
    if (active && lane == 0) {
      if (const T* b = bias_at<T>(g.bias, g.more, n)) acc = acc + to_f(*b);
      v = from_f<T>(acc);
      if constexpr (kE == GemvEpilogue::kResidual)
        v = from_f<T>(to_f(static_cast<const T*>(g.residual)[m * g.residual_stride + n]) + to_f(v));
      if constexpr (kTwo) {
        const float gate = to_f(v);
        const T s = from_f<T>(gate_act(g.activation, gate));
        v = from_f<T>(to_f(s) * to_f(from_f<T>(acc2)));
      }
    }
    if (rot_block) v = rotate<T>(g, v, n, warp);
    if (active && lane == 0) {
      static_cast<T*>(g.y)[m * g.y_stride + n] = v;
      if (target[0]) *target[0] = v;
      if (target[1]) *target[1] = v;
    }
    if constexpr (kNorm) __syncthreads();  // xn is rewritten for the next row
  }
}

constexpr int kUnroll = 4;

// Chunks k0, k0 + step, ... (kUnroll of them, those below k) of weight row w, and of w2 when
// given, into registers: 16-byte loads with the streaming hint.
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

template <typename T>
__device__ inline void widen(const uint4& raw, float* out) {
  const T* v = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = to_f(v[i]);
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

// The decode step's product (one input row, the 16-byte path), as a grid that stays resident:
// block b of the product's column blocks (g.split warps a column, 8 / split columns a block; a
// rotated block takes column pairs of one head) is done by launch block b % gridDim.x, in turn.
// Each lane holds kUnroll 16-byte chunks of a weight row (split chosen so that a row of
// k <= 1024 * split is fetched whole), and fetches the next column's chunks before it sums the
// current one, so the weight stream never waits on an epilogue (kAhead2, one weight, a row
// fetched whole: the next two columns', so that more bytes are in flight). The first fetches are
// issued before the wait for the previous kernel (the weights are constants). After the wait
// each warp sums the norm on its own, once, and (kCached: a row fetched whole) keeps its part of
// x, normalised and rounded as the chain's norm hands it over, in registers for every column.
// Split warps' sums meet in shared memory in a fixed order.
template <typename T, GemvEpilogue kE, bool kNorm, bool kCached, bool kAhead2 = false>
__global__ void __launch_bounds__(32 * kWarps, 2) gemv_half_row_kernel(GemvHalf g) {
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
  pdl_wait();
  if (kE == GemvEpilogue::kNone && blockIdx.x == 0 && threadIdx.x == 0)
    gemv::report_row_writes(g.writes, g.n_writes);
  const float inv = kNorm ? warp_inv_rms<T>(g, x) : 1.f;
  float xc[kCached ? kUnroll * 8 : 1];
  if constexpr (kCached)
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (first + step * u < K) input8<T, kNorm>(g, x, first + step * u, inv, xc + 8 * u);
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
        if (g.n_writes > 0) target[0] = gemv::row_target<T>(g.writes[0], n);
        if (g.n_writes > 1) target[1] = gemv::row_target<T>(g.writes[1], n);
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

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// Warps a column on the one-row path: enough that each lane fetches at most kUnroll 16-byte
// chunks of a weight row (all of it before the wait for the previous kernel), at most a block;
// where the block's columns are rotated, at most half a block (a block holds whole column pairs).
// The cache writes do not change it, nor does the rotation up to k = 4096 (a q/k/v product's sums
// are then those of the same product unrotated, bitwise).
int32_t column_split(const GemvHalf& g) {
  const int64_t chunks = g.k / 8;
  const int32_t most = g.rot_cols > 0 ? kWarps / 2 : kWarps;
  int32_t split = 1;
  while (split < most && chunks > int64_t{32} * kUnroll * split) split *= 2;
  return split;
}

// kKernel over `blocks` column blocks on a grid the device holds at once (it stays resident and
// takes the blocks in turn); the blocks an SM holds are asked once per kernel.
template <auto kKernel>
void launch_resident(const GemvHalf& g, int64_t blocks, cudaStream_t s) {
  static const int64_t resident = [] {
    int device = 0, sms = 0, per_sm = 0;
    IP_CUDA_CHECK(cudaGetDevice(&device), "fused_linear");
    IP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                  "fused_linear");
    IP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kKernel, 32 * kWarps, 0),
                  "fused_linear");
    return int64_t{sms} * (per_sm > 0 ? per_sm : 1);
  }();
  launch_pdl(kKernel, static_cast<unsigned>(blocks < resident ? blocks : resident), 32 * kWarps, s,
             g);
}

template <typename T, GemvEpilogue kE>
void launch(const GemvHalf& given, cudaStream_t s) {
  using Kernel = void (*)(GemvHalf);
  GemvHalf g = given;
  const bool weights16 =
      g.k % 8 == 0 && weights_aligned16(g.w, g.more) && (!g.w2 || aligned16(g.w2));
  if (weights16 && g.rows == 1 && aligned16(g.x) &&
      (!g.norm_w || g.norm_w_float || aligned16(g.norm_w))) {
    g.split = column_split(g);
    const int64_t columns = kWarps / g.split;  // a block
    const int64_t blocks = (g.n + columns - 1) / columns;
    const bool whole = g.k <= int64_t{256} * g.split * kUnroll;  // a row fetched whole
    // A row fetched whole of one weight: two columns ahead (gemv_deep_prefetch).
    constexpr bool kAhead2 = kE != GemvEpilogue::kSwiGLU;
    const bool ahead2 = kAhead2 && gemv_deep_prefetch();
    if (g.norm_w) {
      if (!whole) return launch_resident<gemv_half_row_kernel<T, kE, true, false>>(g, blocks, s);
      return ahead2
                 ? launch_resident<gemv_half_row_kernel<T, kE, true, true, kAhead2>>(g, blocks, s)
                 : launch_resident<gemv_half_row_kernel<T, kE, true, true>>(g, blocks, s);
    }
    if (!whole) return launch_resident<gemv_half_row_kernel<T, kE, false, false>>(g, blocks, s);
    return ahead2 ? launch_resident<gemv_half_row_kernel<T, kE, false, true, kAhead2>>(g, blocks, s)
                  : launch_resident<gemv_half_row_kernel<T, kE, false, true>>(g, blocks, s);
  }
  constexpr Kernel kKernels[2][2] = {
      {gemv_half_kernel<T, kE, false, false>, gemv_half_kernel<T, kE, false, true>},
      {gemv_half_kernel<T, kE, true, false>, gemv_half_kernel<T, kE, true, true>}};
  // x rows are read from shared memory with the norm (aligned there).
  const bool vector = weights16 && (g.norm_w || (g.x_stride % 8 == 0 && aligned16(g.x)));
  const unsigned blocks = static_cast<unsigned>((g.n + kWarps - 1) / kWarps);
  launch_pdl(kKernels[vector][g.norm_w != nullptr], blocks, 32 * kWarps, s, g);
}

template <typename T>
void launch_epilogue(const GemvHalf& g, cudaStream_t s) {
  switch (g.epilogue) {
    case GemvEpilogue::kNone:
      return launch<T, GemvEpilogue::kNone>(g, s);
    case GemvEpilogue::kResidual:
      return launch<T, GemvEpilogue::kResidual>(g, s);
    case GemvEpilogue::kSwiGLU:
      return launch<T, GemvEpilogue::kSwiGLU>(g, s);
  }
}

}  // namespace

bool gemv_half_runs_writes(const GemvHalf& g) {
  return g.epilogue == GemvEpilogue::kNone && g.rows == 1 && g.n > 0;
}

void gemv_half(const GemvHalf& g, void* stream) {
  if (g.rows == 0 || g.n == 0) return;
  IP_CHECK(g.more.count == 0 || g.epilogue != GemvEpilogue::kSwiGLU, kInternal,
           "[cuda] gated_mlp: a grouped product");
  IP_CHECK(g.n <= INT32_MAX, kInternal, "[cuda] fused_linear: ", g.n,
           " columns (the kernel places columns in 32-bit arithmetic)");
  IP_CHECK(!g.norm_w || g.k <= kGemvHalfMaxNormK, kInternal,
           "[cuda] fused_linear: a norm over more than ", kGemvHalfMaxNormK, " elements");
  IP_CHECK(g.n_writes == 0 || gemv_half_runs_writes(g), kInternal,
           "[cuda] fused_linear: row writes from a product that cannot run them");
  IP_CHECK(g.rot_cols == 0 || (g.epilogue == GemvEpilogue::kNone && g.rot_d > 0 &&
                               g.rot_d % 8 == 0 && g.rot_cols % g.rot_d == 0 && g.rot_cols <= g.n),
           kInternal,
           "[cuda] fused_linear: a rotary epilogue over columns that are not whole heads");
  const cudaStream_t s = as_stream(stream);
  if (g.dtype == DType::kBFloat16)
    launch_epilogue<__nv_bfloat16>(g, s);
  else
    launch_epilogue<__half>(g, s);
  IP_CUDA_CHECK(cudaGetLastError(), "fused_linear");
}

}  // namespace inplace::cuda
