// fused_addmm's GEMV (gemv_in_out.h): a block owns C consecutive output columns; its threads
// are TPR column groups of V columns (16 bytes of W's row k when V > 1) times kThreads / TPR
// slices of k. A thread fetches its first kUnroll chunks of W before pdl_wait() (the weights are
// constants, so the fetch overlaps the previous kernel), accumulates its slice of k in float32,
// and the block sums the slices in shared memory in a fixed order; threads below C then apply the
// epilogue (bias, residual, a pointwise program) to one column each. Compiled with --fmad=false
// (pointwise_device.cuh).
#include <type_traits>

#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/gemv_device.cuh"
#include "kernels/cuda/gemv_in_out.h"
#include "kernels/cuda/pointwise_device.cuh"

namespace inplace::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kRows = 4;    // input rows a pass over the weight serves
constexpr int kUnroll = 8;  // chunks of W a thread has in flight

// v rounded to T and back (the chain's rounding of an intermediate to its dtype).
template <typename T>
__device__ inline float rounded(float v) {
  return to_f(from_f<T>(v));
}

// V elements of T: one 16-byte load, or one element.
template <typename T, int V>
struct Chunk {
  uint4 raw;
};
template <typename T>
struct Chunk<T, 1> {
  T raw;
};

template <typename T, int V>
__device__ inline Chunk<T, V> fetch(const T* p) {
  Chunk<T, V> c;
  if constexpr (V == 1)
    c.raw = p[0];
  else
    c.raw = __ldcs(reinterpret_cast<const uint4*>(p));
  return c;
}

template <typename T, int V>
__device__ inline void widen(const Chunk<T, V>& c, float* f) {
  if constexpr (V == 1) {
    f[0] = to_f(c.raw);
  } else {
    const T* e = reinterpret_cast<const T*>(&c.raw);
#pragma unroll
    for (int i = 0; i < V; ++i) f[i] = to_f(e[i]);
  }
}

// The sum of v over the block; every thread gets it.
__device__ inline double block_sum(double v, double* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  double total = 0;
  for (int w = 0; w < kThreads / 32; ++w) total += scratch[w];
  __syncthreads();  // scratch is reused by the next sum
  return total;
}

// The LayerNorm's mean and 1 / sqrt(var + eps) of one row, in double as the cpu kernel.
template <typename T>
__device__ inline void row_stats(const T* xr, int64_t K, double eps, double* scratch, double* mu,
                                 double* rs) {
  double s = 0;
  for (int64_t c = threadIdx.x; c < K; c += kThreads) s += static_cast<double>(to_f(xr[c]));
  const double mean = block_sum(s, scratch) / static_cast<double>(K);
  double q = 0;
  for (int64_t c = threadIdx.x; c < K; c += kThreads) {
    const double d = __dsub_rn(static_cast<double>(to_f(xr[c])), mean);
    q = __dadd_rn(q, __dmul_rn(d, d));
  }
  const double m2 = block_sum(q, scratch);
  *mu = mean;
  *rs = 1.0 / sqrt(m2 / static_cast<double>(K) + eps);
}

// x[k] normalised as the cpu's layer_norm: ((x - mu) * rs) * w + b in double, rounded to T.
template <typename T>
__device__ inline float normed(T x, double mu, double rs, const T* w, const T* b, int64_t k) {
  double v = __dmul_rn(__dsub_rn(static_cast<double>(to_f(x)), mu), rs);
  if (w) v = __dmul_rn(v, static_cast<double>(to_f(w[k])));
  if (b) v = __dadd_rn(v, static_cast<double>(to_f(b[k])));
  return rounded<T>(static_cast<float>(v));
}

// The epilogue program on y (its one input, as the chain stored it); its result is of y's dtype.
// Not inlined: its registers (in local memory) stay out of the product's loop.
__device__ __noinline__ float run_epilogue(const GemvEpilogueProgram& e, float y) {
  auto load = [&](int32_t, DType) { return pointwise_device::make<float>(y); };
  DType t = DType::kFloat32;
  return pointwise_device::run(e.code, e.reg, e.n_code, load, &t).f;
}

template <typename T, int V, int TPR, int R, bool kNorm>
__global__ void __launch_bounds__(kThreads)
    gemv_in_out_kernel(const __grid_constant__ GemvInOut g) {
  pdl_trigger();
  constexpr int C = V * TPR;          // the block's columns
  constexpr int KR = kThreads / TPR;  // k rows one pass of the block covers
  constexpr int P = kThreads / C;     // partial sums a column's total gathers
  static_assert(KR % P == 0 && C <= 32 && 32 % C == 0,
                "every column's slices divide among its summing threads, a warp's lanes too");
  const int tid = threadIdx.x, group = tid % TPR, slice = tid / TPR;
  const int64_t K = g.k, N = g.n;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * C + group * V;
  const bool active = col < N;  // the vector form has n % V == 0: a group is whole or out
  const T* W = static_cast<const T*>(g.w);
  const T* X = static_cast<const T*>(g.x);
  Chunk<T, V> chunks[kUnroll];
  auto fetch_from = [&](int64_t k0) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t k = k0 + static_cast<int64_t>(u) * KR;
      if (k < K) chunks[u] = fetch<T, V>(W + k * N + col);
    }
  };
  if (active) fetch_from(slice);
  pdl_wait();
  __shared__ float part[KR][C];
  __shared__ float gathered[kThreads / 32][C];
  __shared__ double scratch[kThreads / 32];
  // The epilogue's column and operands, requested before the product.
  const int64_t j = static_cast<int64_t>(blockIdx.x) * C + tid;
  const bool writes = tid < C && j < N;
  const float bias = writes && g.bias ? to_f(static_cast<const T*>(g.bias)[j]) : 0.f;
  // The epilogue writes' places (one row: the position read now, its round trip overlapping
  // the product's).
  T* targets[2] = {nullptr, nullptr};
  if constexpr (R == 1)
    for (int w = 0; w < g.n_writes; ++w)
      if (writes) targets[w] = gemv::row_target<T>(g.writes[w], j);
  const T* nw = static_cast<const T*>(g.norm_w);
  const T* nb = static_cast<const T*>(g.norm_b);
  for (int64_t m0 = 0; m0 < g.rows; m0 += R) {
    const int rows = g.rows - m0 < R ? static_cast<int>(g.rows - m0) : R;
    float residual[R];
#pragma unroll
    for (int r = 0; r < R; ++r)
      residual[r] = writes && r < rows && g.residual
                        ? to_f(static_cast<const T*>(g.residual)[(m0 + r) * g.residual_stride + j])
                        : 0.f;
    double mu[R] = {}, rs[R] = {};
    if constexpr (kNorm) {
#pragma unroll
      for (int r = 0; r < R; ++r)
        if (r < rows) row_stats(X + (m0 + r) * g.x_stride, K, g.eps, scratch, &mu[r], &rs[r]);
    }
    float acc[R][V] = {};
    if (active) {
      for (int64_t k0 = slice; k0 < K; k0 += static_cast<int64_t>(KR) * kUnroll) {
        if (m0 > 0 || k0 != slice) fetch_from(k0);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int64_t k = k0 + static_cast<int64_t>(u) * KR;
          if (k >= K) break;
          float wf[V];
          widen<T, V>(chunks[u], wf);
#pragma unroll
          for (int r = 0; r < R; ++r) {
            if (r >= rows) break;
            const T xv = X[(m0 + r) * g.x_stride + k];
            const float xf = kNorm ? normed(xv, mu[r], rs[r], nw, nb, k) : to_f(xv);
#pragma unroll
            for (int v = 0; v < V; ++v) acc[r][v] += xf * wf[v];
          }
        }
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (r >= rows) break;
#pragma unroll
      for (int v = 0; v < V; ++v) part[slice][group * V + v] = acc[r][v];
      __syncthreads();
      // Column c's KR partial sums: P threads (c, c + C, ...) each add every P-th, the lanes of
      // a warp that share c meet by shuffles, then the warps' sums in order.
      const int c = tid % C, p = tid / C;
      float s = 0.f;
      for (int i = p; i < KR; i += P) s += part[i][c];
      for (int o = 16; o >= C; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
      if (tid % 32 < C) gathered[tid / 32][c] = s;
      __syncthreads();
      if (writes) {
        float total = 0.f;
        for (int i = 0; i < kThreads / 32; ++i) total += gathered[i][tid];
        float y = rounded<T>(g.bias ? total + bias : total);  // addmm's result, or mm's
        if (g.residual) y = rounded<T>(y + residual[r]);
        if (g.epilogue.n_code > 0) y = run_epilogue(g.epilogue, y);
        static_cast<T*>(g.y)[(m0 + r) * g.y_stride + j] = from_f<T>(y);
        if constexpr (R == 1)
          for (int w = 0; w < 2; ++w)
            if (targets[w]) *targets[w] = from_f<T>(y);
      }
      __syncthreads();  // part and gathered are reused by the next row
    }
  }
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

template <typename T, int V, int TPR>
void launch_form(const GemvInOut& g, cudaStream_t s) {
  using Kernel = void (*)(const GemvInOut);
  // [one row][norm]
  constexpr Kernel kKernels[2][2] = {
      {gemv_in_out_kernel<T, V, TPR, kRows, false>, gemv_in_out_kernel<T, V, TPR, kRows, true>},
      {gemv_in_out_kernel<T, V, TPR, 1, false>, gemv_in_out_kernel<T, V, TPR, 1, true>}};
  constexpr int64_t C = V * TPR;
  const unsigned blocks = static_cast<unsigned>((g.n + C - 1) / C);
  launch_pdl(kKernels[g.rows == 1][g.norm], blocks, kThreads, s, g);
}

template <typename T>
void launch(const GemvInOut& g, cudaStream_t s) {
  constexpr int V = 16 / sizeof(T);
  // 16-byte chunks: a thread reads 16 bytes of each of its rows of k, a block eight bf16 columns
  // (GPT-2's 768-wide products: 96 blocks, every slice of k 256 rows apart); else one warp reads
  // 32 consecutive elements.
  if (g.n % V == 0 && aligned16(g.w))
    launch_form<T, V, 1>(g, s);
  else
    launch_form<T, 1, 32>(g, s);
}

}  // namespace

void gemv_in_out(const GemvInOut& g, void* stream) {
  if (g.rows == 0 || g.n == 0) return;
  const cudaStream_t s = as_stream(stream);
  switch (g.dtype) {
    case DType::kFloat32:
      launch<float>(g, s);
      break;
    case DType::kBFloat16:
      launch<__nv_bfloat16>(g, s);
      break;
    case DType::kFloat16:
      launch<__half>(g, s);
      break;
    default:
      IP_FAIL(kInternal, "[cuda] fused_addmm: a ", dtype_name(g.dtype), " product");
  }
  IP_CUDA_CHECK(cudaGetLastError(), "fused_addmm");
}

}  // namespace inplace::cuda
