// Row reductions and row-wise normalisations on the device: one block per row, a block-wide
// tree reduction in shared memory, accumulation in float (double for float64, int64 for
// integer sums), NaN-propagating max/min, as the cpu reduction kernels.
#include <type_traits>

#include "kernels/cuda/row_reduce_device.cuh"

namespace inplace::cuda {

namespace {

constexpr int kThreads = row_reduce::kThreads;
using row_reduce::block_reduce;
using row_reduce::combine;

template <typename T>
__device__ T t_exp(T x) {
  if constexpr (std::is_same_v<T, float>)
    return expf(x);
  else
    return static_cast<T>(exp(static_cast<double>(x)));
}
template <typename T>
__device__ T t_log(T x) {
  if constexpr (std::is_same_v<T, float>)
    return logf(x);
  else
    return static_cast<T>(log(static_cast<double>(x)));
}
template <typename T>
__device__ T t_rsqrt(T x) {
  if constexpr (std::is_same_v<T, float>)
    return rsqrtf(x);
  else
    return static_cast<T>(rsqrt(static_cast<double>(x)));
}

template <typename T>
__global__ void row_kernel(RowTask t, int64_t nrows, int64_t ncols) {
  pdl_begin();
  __shared__ T shared[kThreads];
  for (int64_t r = blockIdx.x; r < nrows; r += gridDim.x) {
    const int64_t in_row = offset_of(t.in.rows, r);
    auto x = [&](int64_t c) {
      return load_at<T>(t.in.rows.data, t.in.rows.dtype, in_row + offset_of(t.in.cols, c));
    };
    if (t.op == RowOp::kSum || t.op == RowOp::kMean || t.op == RowOp::kMax || t.op == RowOp::kMin) {
      const bool extreme = t.op == RowOp::kMax || t.op == RowOp::kMin;
      T acc = extreme ? x(0) : T(0);
      for (int64_t c = threadIdx.x; c < ncols; c += blockDim.x) acc = combine(t.op, acc, x(c));
      acc = block_reduce(t.op, acc, shared);
      if (t.op == RowOp::kMean) acc = acc / static_cast<T>(ncols);
      if (threadIdx.x == 0) store<T>(t.out.rows, r, acc);
      continue;
    }
    const int64_t out_row = offset_of(t.out.rows, r);
    auto put = [&](int64_t c, T v) {
      store_at<T>(t.out.rows.data, t.out.rows.dtype, out_row + offset_of(t.out.cols, c), v);
    };
    auto w = [&](const Operand& o, int64_t c) { return load<T>(o, c); };
    if (t.op == RowOp::kSoftmax || t.op == RowOp::kLogSoftmax) {
      T m = x(0);
      for (int64_t c = threadIdx.x; c < ncols; c += blockDim.x) m = combine(RowOp::kMax, m, x(c));
      m = block_reduce(RowOp::kMax, m, shared);
      T s = 0;
      for (int64_t c = threadIdx.x; c < ncols; c += blockDim.x) s += t_exp(x(c) - m);
      s = block_reduce(RowOp::kSum, s, shared);
      const T log_s = t_log(s);
      for (int64_t c = threadIdx.x; c < ncols; c += blockDim.x)
        put(c, t.op == RowOp::kSoftmax ? t_exp(x(c) - m) / s : x(c) - m - log_s);
      continue;
    }
    T mean = 0;
    if (t.op == RowOp::kLayerNorm) {
      for (int64_t c = threadIdx.x; c < ncols; c += blockDim.x) mean += x(c);
      mean = block_reduce(RowOp::kSum, mean, shared) / static_cast<T>(ncols);
    }
    T sq = 0;
    for (int64_t c = threadIdx.x; c < ncols; c += blockDim.x) {
      const T d = x(c) - mean;
      sq += d * d;
    }
    sq = block_reduce(RowOp::kSum, sq, shared);
    const T inv = t_rsqrt(sq / static_cast<T>(ncols) + static_cast<T>(t.eps));
    for (int64_t c = threadIdx.x; c < ncols; c += blockDim.x) {
      T v = (x(c) - mean) * inv;
      if (t.has_weight) v = v * w(t.weight, c);
      if (t.has_bias) v = v + w(t.bias, c);
      put(c, v);
    }
  }
}

// RMSNorm over contiguous float32 rows (the decoder's norms): float4 loads, warp-shuffle sums,
// one shared step across the warps; the generic row kernel walks offsets element by element and
// reduces through shared memory in eight barriers.
__global__ void rms_norm_f32_kernel(RowTask t, int64_t nrows, int64_t ncols) {
  pdl_begin();
  __shared__ float partial[kThreads / 32];
  const int64_t n4 = ncols / 4;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int64_t r = blockIdx.x; r < nrows; r += gridDim.x) {
    const float4* x = reinterpret_cast<const float4*>(t.in.rows.data) + offset_of(t.in.rows, r) / 4;
    float4* y = reinterpret_cast<float4*>(t.out.rows.data) + offset_of(t.out.rows, r) / 4;
    float sq = 0.f;
    for (int64_t c = threadIdx.x; c < n4; c += blockDim.x) {
      const float4 v = x[c];
      sq += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
    if (lane == 0) partial[warp] = sq;
    __syncthreads();
    float total = 0.f;
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) total += partial[w];
    const float inv = rsqrtf(total / static_cast<float>(ncols) + static_cast<float>(t.eps));
    const float4* w = reinterpret_cast<const float4*>(t.weight.data);
    for (int64_t c = threadIdx.x; c < n4; c += blockDim.x) {
      float4 v = x[c];
      v.x *= inv, v.y *= inv, v.z *= inv, v.w *= inv;
      if (t.has_weight) {
        const float4 g = w[c];
        v.x *= g.x, v.y *= g.y, v.z *= g.z, v.w *= g.w;
      }
      y[c] = v;
    }
    __syncthreads();  // `partial` is reused by the next row
  }
}

// LayerNorm over rows whose columns have unit stride (GPT-2's final norm: one row), accumulated
// in float as row_kernel<float>, with the same formula: a thread sums its columns (tid,
// tid + 256, ...) in order, a warp's lanes meet by shuffles, the warps' sums in order; two
// barriers a sum instead of the generic kernel's nine, and no offset arithmetic a column.
__device__ inline float block_sum_f32(float v, float* partial) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.f;
  for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) total += partial[w];
  __syncthreads();  // `partial` is reused by the next sum
  return total;
}

__global__ void layer_norm_rows_kernel(RowTask t, int64_t nrows, int64_t ncols) {
  pdl_begin();
  __shared__ float partial[kThreads / 32];
  const float n = static_cast<float>(ncols);
  for (int64_t r = blockIdx.x; r < nrows; r += gridDim.x) {
    const int64_t in_row = offset_of(t.in.rows, r), out_row = offset_of(t.out.rows, r);
    auto x = [&](int64_t c) { return load_at<float>(t.in.rows.data, t.in.rows.dtype, in_row + c); };
    float s = 0.f;
    for (int64_t c = threadIdx.x; c < ncols; c += blockDim.x) s += x(c);
    const float mean = block_sum_f32(s, partial) / n;
    float sq = 0.f;
    for (int64_t c = threadIdx.x; c < ncols; c += blockDim.x) {
      const float d = x(c) - mean;
      sq += d * d;
    }
    const float inv = rsqrtf(block_sum_f32(sq, partial) / n + static_cast<float>(t.eps));
    for (int64_t c = threadIdx.x; c < ncols; c += blockDim.x) {
      float v = (x(c) - mean) * inv;
      if (t.has_weight) v = v * load_at<float>(t.weight.data, t.weight.dtype, c);
      if (t.has_bias) v = v + load_at<float>(t.bias.data, t.bias.dtype, c);
      store_at<float>(t.out.rows.data, t.out.rows.dtype, out_row + c, v);
    }
  }
}

bool unit_stride(const Operand& o) {
  return o.ndim == 1 && o.stride[0] == 1;
}

// The conditions of layer_norm_rows_kernel: float accumulation, unit-stride columns in and out,
// a weight and bias (where present) of unit stride.
bool layer_norm_fast(const RowTask& t) {
  return t.op == RowOp::kLayerNorm && compute_kind(t.compute) == 0 && unit_stride(t.in.cols) &&
         unit_stride(t.out.cols) && (!t.has_weight || unit_stride(t.weight)) &&
         (!t.has_bias || unit_stride(t.bias));
}

bool unit_f32(const Operand& o) {
  return o.dtype == DType::kFloat32 && o.ndim == 1 && o.stride[0] == 1 &&
         reinterpret_cast<uintptr_t>(o.data) % 16 == 0;
}

// The conditions of rms_norm_f32_kernel: float32 throughout, unit-stride rows whose starts are
// 16-byte aligned, a weight (if any) likewise, no bias.
bool rms_norm_fast(const RowTask& t, int64_t ncols) {
  if (t.op != RowOp::kRmsNorm || t.has_bias || ncols % 4 != 0 || compute_kind(t.compute) != 0)
    return false;
  if (!unit_f32(t.in.cols) || !unit_f32(t.out.cols)) return false;
  if (t.in.rows.dtype != DType::kFloat32 || t.out.rows.dtype != DType::kFloat32) return false;
  for (const Operand* o : {&t.in.rows, &t.out.rows})
    for (int d = 0; d < o->ndim; ++d)
      if (o->size[d] > 1 && o->stride[d] % 4 != 0) return false;
  if (reinterpret_cast<uintptr_t>(t.in.rows.data) % 16 ||
      reinterpret_cast<uintptr_t>(t.out.rows.data) % 16)
    return false;
  return !t.has_weight ||
         (t.weight.dtype == DType::kFloat32 && t.weight.ndim == 1 && t.weight.stride[0] == 1 &&
          reinterpret_cast<uintptr_t>(t.weight.data) % 16 == 0);
}

// argmax / argmin: each thread keeps its best (value, first index), then the block merges.
template <typename T>
__device__ bool better(bool is_max, T v, int64_t i, T best, int64_t best_i) {
  if (best_i < 0) return true;
  if constexpr (!std::is_integral_v<T>) {
    if (best != best) return false;  // NaN already found, at a smaller index
    if (v != v) return true;
  }
  if (v == best) return i < best_i;
  return is_max ? v > best : v < best;
}

template <typename T>
__global__ void arg_kernel(RowTask t, int64_t nrows, int64_t ncols) {
  pdl_begin();
  __shared__ T sv[kThreads];
  __shared__ int64_t si[kThreads];
  const bool is_max = t.op == RowOp::kArgMax;
  for (int64_t r = blockIdx.x; r < nrows; r += gridDim.x) {
    const int64_t in_row = offset_of(t.in.rows, r);
    T best = T(0);
    int64_t best_i = -1;
    for (int64_t c = threadIdx.x; c < ncols; c += blockDim.x) {
      const T v = load_at<T>(t.in.rows.data, t.in.rows.dtype, in_row + offset_of(t.in.cols, c));
      if (better(is_max, v, c, best, best_i)) best = v, best_i = c;
    }
    sv[threadIdx.x] = best;
    si[threadIdx.x] = best_i;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s && si[threadIdx.x + s] >= 0 &&
          better(is_max, sv[threadIdx.x + s], si[threadIdx.x + s], sv[threadIdx.x],
                 si[threadIdx.x])) {
        sv[threadIdx.x] = sv[threadIdx.x + s];
        si[threadIdx.x] = si[threadIdx.x + s];
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) store<int64_t>(t.out.rows, r, si[0]);
    __syncthreads();
  }
}

}  // namespace

void row_op(const RowTask& task, void* stream) {
  const int64_t nrows = numel(task.in.rows), ncols = numel(task.in.cols);
  if (nrows == 0) return;
  const unsigned grid = static_cast<unsigned>(nrows < 65535 * 4 ? nrows : 65535 * 4);
  const cudaStream_t s = as_stream(stream);
  if (task.op == RowOp::kArgMax || task.op == RowOp::kArgMin) {
    if (compute_kind(task.in.rows.dtype) == 2)
      launch_pdl(arg_kernel<int64_t>, grid, kThreads, s, task, nrows, ncols);
    else
      launch_pdl(arg_kernel<double>, grid, kThreads, s, task, nrows, ncols);
    IP_CUDA_CHECK(cudaGetLastError(), "argmax");
    return;
  }
  if (rms_norm_fast(task, ncols)) {
    launch_pdl(rms_norm_f32_kernel, grid, kThreads, s, task, nrows, ncols);
    IP_CUDA_CHECK(cudaGetLastError(), "rms_norm");
    return;
  }
  if (layer_norm_fast(task)) {
    launch_pdl(layer_norm_rows_kernel, grid, kThreads, s, task, nrows, ncols);
    IP_CUDA_CHECK(cudaGetLastError(), "layer_norm");
    return;
  }
  switch (compute_kind(task.compute)) {
    case 0:
      launch_pdl(row_kernel<float>, grid, kThreads, s, task, nrows, ncols);
      break;
    case 1:
      launch_pdl(row_kernel<double>, grid, kThreads, s, task, nrows, ncols);
      break;
    default:
      launch_pdl(row_kernel<int64_t>, grid, kThreads, s, task, nrows, ncols);
  }
  IP_CUDA_CHECK(cudaGetLastError(), "row reduction");
}

}  // namespace inplace::cuda
