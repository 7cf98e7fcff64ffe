// The half GEMV's generic kernel (several rows, unaligned rows: one warp per output column,
// eight columns a block, lanes striding along k, float32 accumulation, a warp reduction, then the
// epilogue rounding to T where the chain rounds; with a norm its block first normalises each
// input row into shared memory as T, the value the chain's norm hands the product) and the
// launches of every kernel by a product's shape (one row on the 16-byte path: the column or the
// stream kernel). Included by gemv_half.cu and gemv_half_layer.cu (the LayerNorm and GELU forms,
// kLayer / kGeluNew, compiled with --fmad=false): each instantiates its own forms.
#pragma once
#include "kernels/cuda/gate_act.cuh"
#include "kernels/cuda/gelu_new_device.cuh"
#include "kernels/cuda/gemv_half_columns.cuh"
#include "kernels/cuda/gemv_half_device.cuh"
#include "kernels/cuda/gemv_half_stream.cuh"
#include "kernels/cuda/layer_norm_device.cuh"

namespace inplace::cuda::half_gemv {

// Row m of x normalised as upcast_rms_norm does (kLayer: as layer_norm, each warp computing the
// row's statistics itself), into xn[0, k): every thread of the block calls it.
template <typename T, bool kLayer>
__device__ inline void normalise_row(const GemvHalf& g, const T* xr, T* xn) {
  if constexpr (kLayer) {  // as layer_normed8, element by element
    float mean = 0.f, rstd = 1.f;
    layer_stats<T>(g, xr, &mean, &rstd);
    const T* w = static_cast<const T*>(g.norm_w);
    const T* b = static_cast<const T*>(g.norm_b);
    for (int64_t k = threadIdx.x; k < g.k; k += blockDim.x) {
      const float h = __fmul_rn(__fmul_rn(__fsub_rn(to_f(xr[k]), mean), rstd), to_f(w[k]));
      xn[k] = from_f<T>(b ? __fadd_rn(h, to_f(b[k])) : h);
    }
    __syncthreads();
    return;
  }
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

// The same, one warp a column (kWarps columns a block), cos[j] and sin[j] read here.
template <typename T>
__device__ inline T rotate(const GemvHalf& g, T v, int64_t n, int warp) {
  const int64_t j = rotary_place(g, n);
  const float c = to_f(static_cast<const T*>(g.cos)[j]);
  const float s = to_f(static_cast<const T*>(g.sin)[j]);
  return half_gemv::rotate<T>(g, v, n, warp, kWarps / 2, true, c, s);
}

template <typename T, GemvEpilogue kE, bool kVector, bool kNorm, bool kLayer = false>
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
    gemv::report_row_writes<1>(g.writes, g.n_writes);
  const T* w = weight_row<T>(g.w, g.more, active ? n : 0, g.k);
  const T* w2 = kTwo ? static_cast<const T*>(g.w2) + (active ? n : 0) * g.k : nullptr;
  for (int64_t m = 0; m < g.rows; ++m) {
    const T* xr = static_cast<const T*>(g.x) + m * g.x_stride;
    if constexpr (kNorm) {
      normalise_row<T, kLayer>(g, xr, xn);
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
      if constexpr (kE == GemvEpilogue::kGeluNew) v = from_f<T>(gelu_new<T>(g.gelu, to_f(v)));
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

inline bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// The blocks of kKernel the device holds at once, asked once per kernel.
template <auto kKernel>
int64_t resident_blocks() {
  static const int64_t resident = [] {
    int device = 0, sms = 0, per_sm = 0;
    IP_CUDA_CHECK(cudaGetDevice(&device), "fused_linear");
    IP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                  "fused_linear");
    IP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kKernel, 32 * kWarps, 0),
                  "fused_linear");
    return int64_t{sms} * (per_sm > 0 ? per_sm : 1);
  }();
  return resident;
}

// The stream kernel on a grid the device holds at once (it stays resident and takes the task
// groups in turn), no larger than the tasks need. Warps a task: as many as keep the tasks within
// the warps the device holds at once (one wave), at most a block, each part's lanes a chunk of
// every row.
template <auto kKernel>
void launch_stream(GemvHalf g, cudaStream_t s) {
  const bool two = g.epilogue == GemvEpilogue::kSwiGLU;  // one column, two weights
  const int64_t streams = 2, tasks = two ? g.n : g.rot_cols / 2 + (g.n - g.rot_cols + 1) / 2;
  const int64_t resident = resident_blocks<kKernel>(), chunks = g.k / 8;
  g.split = 1;
  while (g.split < kWarps && tasks * g.split * 2 <= resident * kWarps && chunks >= 64 * g.split)
    g.split *= 2;
  const int64_t per_block = kWarps / g.split, groups = (tasks + per_block - 1) / per_block;
  const int64_t round_k = int64_t{256} * kRoundChunks / streams * g.split;
  g.tasks = static_cast<uint32_t>(tasks);
  g.rot_tasks = static_cast<uint32_t>(two ? 0 : g.rot_cols / 2);
  g.groups = static_cast<uint32_t>(groups);
  g.round_k = static_cast<uint32_t>(round_k);
  g.rounds = static_cast<uint32_t>((g.k + round_k - 1) / round_k);
  launch_pdl(kKernel, static_cast<unsigned>(groups < resident ? groups : resident), 32 * kWarps, s,
             g);
}

// The column kernel over its column blocks, on a grid the device holds at once.
template <auto kKernel>
void launch_columns(const GemvHalf& g, int64_t blocks, cudaStream_t s) {
  const int64_t resident = resident_blocks<kKernel>();
  launch_pdl(kKernel, static_cast<unsigned>(blocks < resident ? blocks : resident), 32 * kWarps, s,
             g);
}

// Weight bytes from which the one-row product streams tasks (gemv_half_stream.cuh) rather than
// column blocks (gemv_half_columns.cuh). H200, one kernel each, PDL off: the stream kernel
// takes Llama-3.2-1B's q/k/v (12.6 MB) in 11.3 us against 15, gate/up (67 MB) 19.3 against
// 23.2, down (33.5 MB) 12.5 against ~20; the column kernel a 1024-wide model's o_proj (2.1 MB)
// in 2.9 us against 4.0, its q/k/v (3.1 MB) 6.7 against 7.4, and the 1B o_proj (8.4 MB) 5.4
// against 6.0.
constexpr int64_t kStreamBytes = 10'000'000;
// And rows at least this long (k): shorter rows take the column blocks at any size. H100, session
// 33, every product on column blocks against main's choice (`bench/hf_variants.py`, processes
// alternated): the medium Llama (gate/up 11.5 MB and the LM head 33.5 MB, k 1024) 0.302 -> 0.294
// ms, GPT-2 medium (its LM head, k 1024) 0.3125 -> 0.3106 ms; the 1B shape's products (k 2048,
// 8192) keep the streams, whose down (k 8192) took 12.0 us against 13.8 on columns.
constexpr int64_t kStreamMinK = 2048;

// One row on the 16-byte path: the column or the stream kernel (launch_one_row).
// The weights are read in 16-byte chunks.
inline bool weights16(const GemvHalf& g) {
  return g.k % 8 == 0 && weights_aligned16(g.w, g.more) && (!g.w2 || aligned16(g.w2));
}

inline bool one_row_path(const GemvHalf& g) {
  return weights16(g) && g.rows == 1 && aligned16(g.x) &&
         (!g.norm_w || g.norm_w_float || aligned16(g.norm_w)) && (!g.norm_b || aligned16(g.norm_b));
}

// The one-row product takes the task streams (else the column blocks). The stream kernel stages
// the input row in shared memory: k at most kGemvHalfMaxNormK.
inline bool takes_streams(const GemvHalf& g) {
  const int64_t bytes =
      g.n * g.k * int64_t{2} * (g.epilogue == GemvEpilogue::kSwiGLU ? 2 : 1);  // T: 2 bytes
  const GemvPath path = gemv_half_path();
  return (path == GemvPath::kStream ||
          (path == GemvPath::kAuto && bytes >= kStreamBytes && g.k >= kStreamMinK)) &&
         g.k <= kGemvHalfMaxNormK;
}

// A row of the column blocks is fetched whole by a block's lanes (split warps a column).
inline bool row_fetched_whole(const GemvHalf& g, int32_t split) {
  return g.k <= int64_t{256} * split * kUnroll;
}

// The one-row product's kernel normalises the row once a block into shared memory (stage_row):
// the stream kernel with a norm, or the column blocks over a row fetched whole of at most
// kBlockNormK.
inline bool stages_row_once(const GemvHalf& g) {
  if (!one_row_path(g) || !(g.norm_w || g.norm_layer)) return false;
  return takes_streams(g) || (row_fetched_whole(g, column_split(g)) && g.k <= kBlockNormK);
}

template <typename T, GemvEpilogue kE, bool kLayer = false>
void launch_one_row(GemvHalf g, cudaStream_t s) {
  if (takes_streams(g)) {
    if (kLayer || g.norm_w)
      return launch_stream<gemv_half_stream_kernel<T, kE, true, kLayer>>(g, s);
    if constexpr (!kLayer) return launch_stream<gemv_half_stream_kernel<T, kE, false>>(g, s);
  }
  g.split = column_split(g);
  const int64_t columns = kWarps / g.split;  // a block
  const int64_t blocks = (g.n + columns - 1) / columns;
  const bool whole = row_fetched_whole(g, g.split);
  // A row fetched whole of one weight: two columns ahead.
  constexpr bool kAhead2 = kE != GemvEpilogue::kSwiGLU;
  if (kLayer || g.norm_w) {
    // The row normalised once a block where its threads hold it at one chunk each.
    if (whole && g.k <= kBlockNormK)
      return launch_columns<gemv_half_columns_kernel<T, kE, true, true, kAhead2, kLayer, true>>(
          g, blocks, s);
    if (!whole)
      return launch_columns<gemv_half_columns_kernel<T, kE, true, false, false, kLayer>>(g, blocks,
                                                                                         s);
    return launch_columns<gemv_half_columns_kernel<T, kE, true, true, kAhead2, kLayer>>(g, blocks,
                                                                                        s);
  }
  // (kLayer: a LayerNorm form always has its norm; its file instantiates no norm-free kernel of
  // gemv_half.cu's epilogues, so that each kernel is compiled in one file only.)
  if constexpr (!kLayer) {
    if (!whole)
      return launch_columns<gemv_half_columns_kernel<T, kE, false, false, false>>(g, blocks, s);
    return launch_columns<gemv_half_columns_kernel<T, kE, false, true, kAhead2>>(g, blocks, s);
  }
}

template <typename T, GemvEpilogue kE, bool kLayer = false>
void launch(const GemvHalf& g, cudaStream_t s) {
  using Kernel = void (*)(GemvHalf);
  if (one_row_path(g)) return launch_one_row<T, kE, kLayer>(g, s);
  // x rows are read from shared memory with the norm (aligned there).
  const bool vector = weights16(g) && (g.norm_w || (g.x_stride % 8 == 0 && aligned16(g.x)));
  const unsigned blocks = static_cast<unsigned>((g.n + kWarps - 1) / kWarps);
  if constexpr (kLayer) {
    constexpr Kernel kNormed[2] = {gemv_half_kernel<T, kE, false, true, true>,
                                   gemv_half_kernel<T, kE, true, true, true>};
    launch_pdl(kNormed[vector], blocks, 32 * kWarps, s, g);
  } else {
    constexpr Kernel kKernels[2][2] = {
        {gemv_half_kernel<T, kE, false, false>, gemv_half_kernel<T, kE, false, true>},
        {gemv_half_kernel<T, kE, true, false>, gemv_half_kernel<T, kE, true, true>}};
    launch_pdl(kKernels[vector][g.norm_w != nullptr], blocks, 32 * kWarps, s, g);
  }
}

}  // namespace inplace::cuda::half_gemv
