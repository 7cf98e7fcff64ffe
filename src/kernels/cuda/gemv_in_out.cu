// fused_addmm's GEMV (gemv_in_out.h), two kernels. One row (a decode step, the weight's columns
// whole 16-byte chunks, 16-byte aligned): gemv_in_out_row_kernel, whose warps read whole 128-byte
// lines of W's rows and whose blocks split k within a thread-block cluster (its comment). Else
// gemv_in_out_kernel: a block owns C consecutive output columns; its threads are TPR column
// groups of V columns (16 bytes of W's row k when V > 1) times kThreads / TPR slices of k. A
// thread fetches its first kUnroll chunks of W before pdl_wait() (the weights are constants, so
// the fetch overlaps the previous kernel), accumulates its slice of k in float32, and the block
// sums the slices in shared memory in a fixed order; threads below C then apply the epilogue
// (bias, residual, a pointwise program) to one column each. Compiled with --fmad=false
// (pointwise_device.cuh).
#include <cooperative_groups.h>

#include <algorithm>
#include <array>
#include <type_traits>

#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/gelu_new_device.cuh"
#include "kernels/cuda/gemv_device.cuh"
#include "kernels/cuda/gemv_in_out.h"
#include "kernels/cuda/layer_norm_device.cuh"
#include "kernels/cuda/pointwise_device.cuh"

namespace inplace::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kRows = 4;    // input rows a pass over the weight serves
constexpr int kUnroll = 8;  // chunks of W a thread has in flight

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

// The epilogue program on y (its one input, as the chain stored it); its result is of y's dtype.
// Not inlined: its registers (in local memory) stay out of the product's loop. A program of the
// product's dtype throughout (GPT-2's GELU) runs in float registers, with the same roundings.
template <typename T>
__device__ __noinline__ float run_epilogue(const GemvEpilogueProgram& e, float y) {
  if (e.gelu_new) return gelu_new<T>(e.gelu, y);
  if (e.activation)
    return pointwise_device::run_one_dtype<T, true>(e.code, e.n_code, [&](int32_t) { return y; });
  if (e.one_dtype)
    return pointwise_device::run_one_dtype<T>(e.code, e.n_code, [&](int32_t) { return y; });
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
  // The epilogue's column and operands, requested before the product.
  const int64_t j = static_cast<int64_t>(blockIdx.x) * C + tid;
  const bool writes = tid < C && j < N;
  const float bias = writes && g.bias ? to_f(static_cast<const T*>(g.bias)[j]) : 0.f;
  // The epilogue writes' places (one row: the position read now, its round trip overlapping
  // the product's).
  T* targets[2] = {nullptr, nullptr};
  if constexpr (R == 1) {
    for (int w = 0; w < g.n_writes; ++w)
      if (writes) targets[w] = gemv::row_target<T>(g.writes[w], j);
    if (blockIdx.x == 0 && tid < 32) gemv::report_row_writes<32>(g.writes, g.n_writes);
  }
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
        if (r < rows) row_stats(X + (m0 + r) * g.x_stride, K, g.eps, &mu[r], &rs[r]);
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
        if (g.epilogue.n_code > 0) y = run_epilogue<T>(g.epilogue, y);
        static_cast<T*>(g.y)[(m0 + r) * g.y_stride + j] = from_f<T>(y);
        if constexpr (R == 1)
          for (int w = 0; w < 2; ++w)
            if (targets[w]) *targets[w] = from_f<T>(y);
      }
      __syncthreads();  // part and gathered are reused by the next row
    }
  }
}

// The one-row path (a decode step). A block reads a tile of C columns, 128 bytes of each row of W
// (kRowLanes lanes x 16 bytes: whole cache lines), over its share of k: a warp reads 4 rows at
// once, the block kSlots, each thread every kSlots-th row of the share, kRowUnroll loads in
// flight. The grid is (split, tiles): the `split` blocks of a tile divide k among them and form
// one thread-block cluster; each sends its block sum of column c to the shared memory of the
// block that finishes c (C / split columns each), which adds them in cluster-rank order and
// runs the epilogue. No scratch or counters; every sum in a fixed order. kEpi: no epilogue
// program, one interpreted (its call raises the kernel's registers: two blocks an SM instead of
// three), or GPT-2's gelu_new as straight-line code.
constexpr int kRowLanes = 8;                  // lanes reading one row of a tile
constexpr int kSlots = kThreads / kRowLanes;  // rows of W the block reads at once
constexpr int kRowUnroll = 8;                 // loads a thread has in flight
constexpr int kMaxSplit = 8;                  // the portable cluster size
constexpr int kMaxShare = 2048;               // rows of k a block's input stage holds
constexpr int kRowWarps = kThreads / 32;
constexpr int kNoEpi = 0, kProgramEpi = 1, kGeluNewEpi = 2;  // the one-row kernel's epilogues

template <typename T, bool kNorm, int kEpi>
__global__ void __launch_bounds__(kThreads)
    gemv_in_out_row_kernel(const __grid_constant__ GemvInOut g) {
  namespace cg = cooperative_groups;
  constexpr int V = 16 / sizeof(T);
  constexpr int C = kRowLanes * V;  // the tile's columns
  pdl_trigger();
  const cg::cluster_group cluster = cg::this_cluster();
  const int split = static_cast<int>(cluster.dim_blocks().x);
  const int rank = static_cast<int>(cluster.block_rank());
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int64_t K = g.k, N = g.n;
  // The block's share of k, [k0, k1), and its thread's column chunk and first row.
  const int64_t share = (K + split - 1) / split;
  const int64_t k0 = rank * share, k1 = k0 + share < K ? k0 + share : K;
  const int64_t tile = static_cast<int64_t>(blockIdx.y) * C;
  const int64_t col = tile + (tid % kRowLanes) * V;
  // The thread's rows: slot, slot + kSlots, ... of the share (`count` of them).
  const int slot = tid / kRowLanes;
  const int count = k0 + slot < k1 ? static_cast<int>((k1 - k0 - slot + kSlots - 1) / kSlots) : 0;
  const bool active = col < N;  // n % V == 0: a chunk is whole or out
  const T* wp = static_cast<const T*>(g.w) + (k0 + slot) * N + col;
  const int64_t step = kSlots * N;
  const T* X = static_cast<const T*>(g.x);
  auto fetch = [&](int i) { return __ldcs(reinterpret_cast<const uint4*>(wp + i * step)); };
  // The weights are constants: the first kRowUnroll rows are fetched before the wait for the
  // previous kernel.
  uint4 raw[kRowUnroll];
  if (active)
#pragma unroll
    for (int u = 0; u < kRowUnroll; ++u)
      if (u < count) raw[u] = fetch(u);
  // With an epilogue program, the block's last warp runs it once on nothing while the weights are
  // in flight (its code is then in the SM's instruction cache when the sums are done) and stages
  // none of the input: the other warps' statistics and staging do not wait for it.
  constexpr bool kProgram = kEpi == kProgramEpi;
  const bool warms = kProgram && warp == kRowWarps - 1;
  if (warms) {
    const float warm = run_epilogue<T>(g.epilogue, 0.f);
    asm volatile("" ::"f"(warm));
  }
  // The first half of a cluster barrier: past its wait, every block of the cluster has started
  // (its shared memory may be written). Relaxed: it orders no memory (a release would first wait
  // for the weights in flight).
  if (split > 1) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
  pdl_wait();
  if (blockIdx.x == 0 && blockIdx.y == 0 && tid < 32)
    gemv::report_row_writes<32>(g.writes, g.n_writes);
  // The columns this block finishes, and their epilogue operands, requested before the product.
  const int own = C / split;  // the columns of the tile this block finishes
  const int64_t j = tile + rank * own + tid;
  const bool finishes = tid < own && j < N;
  float bias = 0.f, residual = 0.f;
  T* targets[2] = {nullptr, nullptr};
  if (finishes) {
    if (g.bias) bias = to_f(static_cast<const T*>(g.bias)[j]);
    if (g.residual) residual = to_f(static_cast<const T*>(g.residual)[j]);
    for (int w = 0; w < g.n_writes; ++w) targets[w] = gemv::row_target<T>(g.writes[w], j);
  }
  // The share of the input (normalised: the value the chain's layer_norm hands the product), by
  // every warp but the warming one; each of those warps computes the row's statistics itself. The
  // norm's weight and bias at the thread's first element of the share are requested before them.
  constexpr int kStagers = kProgram ? kThreads - 32 : kThreads;
  __shared__ float xs[kMaxShare];
  if (!warms) {
    const T* nw = static_cast<const T*>(g.norm_w);
    const T* nb = static_cast<const T*>(g.norm_b);
    const int64_t kx = k0 + tid;
    T w0 = T(), b0 = T();
    if (kNorm && kx < k1) {
      if (nw) w0 = nw[kx];
      if (nb) b0 = nb[kx];
    }
    double mu = 0, rs = 0;
    if constexpr (kNorm) row_stats(X, K, g.eps, &mu, &rs);
    for (int64_t k = kx; k < k1; k += kStagers) {
      if (!kNorm)
        xs[k - k0] = to_f(X[k]);
      else if (k == kx)
        xs[k - k0] = normed(X[k], mu, rs, nw != nullptr, w0, nb != nullptr, b0);
      else
        xs[k - k0] = normed(X[k], mu, rs, nw, nb, k);
    }
  }
  // The stage is whole once every stager has written its part. With a warming warp, the stagers
  // wait only for one another (barrier 2), then arrive on barrier 1, on which the warming warp,
  // once warm, waits: its instruction-cache misses delay no one else's product.
  if constexpr (kProgram) {
    if (warms) {
      asm volatile("bar.sync 1, %0;" ::"n"(kThreads) : "memory");
    } else {
      asm volatile("bar.sync 2, %0;" ::"n"(kStagers) : "memory");
      asm volatile("bar.arrive 1, %0;" ::"n"(kThreads) : "memory");
    }
  } else {
    __syncthreads();
  }
  float acc[V] = {};
  if (active) {
    for (int i0 = 0; i0 < count; i0 += kRowUnroll) {
#pragma unroll
      for (int u = 0; u < kRowUnroll; ++u) {
        const int i = i0 + u;
        if (i >= count) break;
        float wf[V];
        widen<T, V>(Chunk<T, V>{raw[u]}, wf);
        // Its register refilled at once: kRowUnroll loads stay in flight.
        if (i + kRowUnroll < count) raw[u] = fetch(i + kRowUnroll);
        const float xf = xs[slot + i * kSlots];
#pragma unroll
        for (int v = 0; v < V; ++v) acc[v] += xf * wf[v];
      }
    }
  }
  // The warp's four rows of a chunk meet by shuffles, then the block's warps in order.
#pragma unroll
  for (int v = 0; v < V; ++v) {
    acc[v] += __shfl_xor_sync(0xffffffffu, acc[v], kRowLanes);
    acc[v] += __shfl_xor_sync(0xffffffffu, acc[v], 2 * kRowLanes);
  }
  __shared__ float warp_sums[kRowWarps][C];
  if (lane < kRowLanes)
#pragma unroll
    for (int v = 0; v < V; ++v) warp_sums[warp][lane * V + v] = acc[v];
  __syncthreads();
  float total = 0.f;
  if (tid < C)
    for (int w = 0; w < kRowWarps; ++w) total += warp_sums[w][tid];
  // The split blocks' sums of column c, in the shared memory of the block that finishes c.
  __shared__ float block_sums[kMaxSplit][C];
  if (split > 1) {
    cluster.barrier_wait();
    if (tid < C) cluster.map_shared_rank(&block_sums[0][0], tid / own)[rank * C + tid] = total;
    cluster.sync();  // every store has arrived; afterwards a block reads only its own memory
    if (finishes) {
      total = 0.f;
      for (int r = 0; r < split; ++r) total += block_sums[r][j - tile];
    }
  }
  if (!finishes) return;
  float y = rounded<T>(g.bias ? total + bias : total);  // addmm's result, or mm's
  if (g.residual) y = rounded<T>(y + residual);
  if constexpr (kProgram) y = run_epilogue<T>(g.epilogue, y);
  if constexpr (kEpi == kGeluNewEpi) y = gelu_new<T>(g.epilogue.gelu, y);
  static_cast<T*>(g.y)[j] = from_f<T>(y);
  for (int w = 0; w < 2; ++w)
    if (targets[w]) *targets[w] = from_f<T>(y);
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

// The one-row path's split of k (1, 2, 4 or 8 blocks a tile), or 0 where it does not apply (a
// block's share of k past kMaxShare). Doubled while the grid is under two blocks an SM, each
// block keeps at least kSlots rows per split half, and the doubled grid still fits the GPU at
// once (`resident` blocks).
int row_split(int64_t k, int64_t tiles, int64_t sms, int64_t resident) {
  int split = 1;
  while (split < kMaxSplit && k >= 2 * split * kSlots &&
         ((k + split - 1) / split > kMaxShare ||
          (tiles * split < 2 * sms && tiles * split * 2 <= resident)))
    split *= 2;
  return (k + split - 1) / split <= kMaxShare ? split : 0;
}

// The one-row kernel's launch; false, having launched nothing, where no split applies.
template <typename T, bool kNorm, int kEpi>
bool launch_row(const GemvInOut& g, cudaStream_t s) {
  constexpr auto kernel = gemv_in_out_row_kernel<T, kNorm, kEpi>;
  constexpr int64_t C = kRowLanes * (16 / sizeof(T));
  // The GPU's SMs and the blocks that fit on it at once (asked on the first call) of the
  // heaviest form (norm and interpreted program): the split, and so the order of the sums, is
  // the same with and without a prologue or an epilogue (a product's bits do not depend on
  // them).
  static const std::array<int64_t, 2> capacity = [] {
    int device = 0, count = 0, per_sm = 0;
    IP_CUDA_CHECK(cudaGetDevice(&device), "fused_addmm");
    IP_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device),
                  "fused_addmm");
    IP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                      &per_sm, gemv_in_out_row_kernel<T, true, kProgramEpi>, kThreads, 0),
                  "fused_addmm");
    return std::array<int64_t, 2>{count, int64_t{count} * per_sm};
  }();
  const int64_t tiles = (g.n + C - 1) / C;
  const int split = tiles <= 65535 ? row_split(g.k, tiles, capacity[0], capacity[1]) : 0;
  if (split == 0) return false;
  launch_pdl_cluster(kernel, dim3(split, static_cast<unsigned>(tiles)), kThreads, dim3(split, 1, 1),
                     s, g);
  return true;
}

template <typename T>
bool launch_one_row(const GemvInOut& g, cudaStream_t s) {
  using Launch = bool (*)(const GemvInOut&, cudaStream_t);
  // [norm][none, interpreted program, gelu_new]
  constexpr Launch kLaunch[2][3] = {
      {launch_row<T, false, kNoEpi>, launch_row<T, false, kProgramEpi>,
       launch_row<T, false, kGeluNewEpi>},
      {launch_row<T, true, kNoEpi>, launch_row<T, true, kProgramEpi>,
       launch_row<T, true, kGeluNewEpi>}};
  const int epi = g.epilogue.n_code == 0 ? kNoEpi : g.epilogue.gelu_new ? kGeluNewEpi : kProgramEpi;
  return kLaunch[g.norm][epi](g, s);
}

template <typename T>
void launch(const GemvInOut& g, cudaStream_t s) {
  constexpr int V = 16 / sizeof(T);
  const bool vector = g.n % V == 0 && aligned16(g.w);
  // One row: whole 128-byte lines of W a warp, k split across a cluster (gemv_in_out_row_kernel).
  if (vector && g.rows == 1 && g.k > 0 && launch_one_row<T>(g, s)) return;
  // 16-byte chunks: a thread reads 16 bytes of each of its rows of k, a block eight bf16 columns,
  // up to four input rows a pass; else one warp reads 32 consecutive elements.
  if (vector)
    launch_form<T, V, 1>(g, s);
  else
    launch_form<T, 1, 32>(g, s);
}

// Sets e.one_dtype (every instruction a load, number, unary, binary or pow_scalar op of dtype t:
// pointwise_device::run_one_dtype's programs) and e.activation (one_dtype, and every unary and
// binary op one that pointwise_device::run_one_dtype<T, true> runs), in one walk of the program.
void classify(GemvEpilogueProgram& e, DType t) {
  using pointwise::Opcode;
  e.one_dtype = e.activation = true;
  for (int k = 0; k < e.n_code; ++k) {
    const pointwise::Instr& in = e.code[k];
    const bool op = in.op == Opcode::kLoad || in.op == Opcode::kConst || in.op == Opcode::kUnary ||
                    in.op == Opcode::kBinary || in.op == Opcode::kPowScalar ||
                    in.op == Opcode::kStore;
    if (!op || static_cast<DType>(in.dtype) != t) {
      e.one_dtype = e.activation = false;
      return;
    }
    if ((in.op == Opcode::kUnary && !pointwise_device::activation_unary(in.b)) ||
        (in.op == Opcode::kBinary && !pointwise_device::activation_binary(in.c)))
      e.activation = false;
  }
}

}  // namespace

void gemv_in_out(const GemvInOut& product, void* stream) {
  if (product.rows == 0 || product.n == 0) return;
  GemvInOut g = product;
  classify(g.epilogue, g.dtype);
  g.epilogue.gelu_new =
      g.epilogue.one_dtype && g.epilogue.n_code > 0 &&
      pointwise::match_gelu_new(g.epilogue.code, g.epilogue.n_code, &g.epilogue.gelu);
  const cudaStream_t s = as_stream(stream);
  if (!visit_float_storage(g.dtype, [&]<typename T>() { launch<T>(g, s); }))
    IP_FAIL(kInternal, "[cuda] fused_addmm: a ", dtype_name(g.dtype), " product");
  IP_CUDA_CHECK(cudaGetLastError(), "fused_addmm");
}

}  // namespace inplace::cuda
