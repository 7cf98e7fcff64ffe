// The block-wide row reduction of reduction.cu's row kernel, as device code (included by
// reduction.cu and by fused_pointwise.cu, whose fused_rows kernel reduces its rows in the same
// order, so that its sums are bitwise the unfused reduction's): a thread combines its columns
// (tid, tid + 256, ...) in order, then the block's values meet in a tree in shared memory.
#pragma once
#include <type_traits>

#include "kernels/cuda/device_common.cuh"

namespace inplace::cuda::row_reduce {

constexpr int kThreads = 256;

template <typename T>
__device__ T combine(RowOp op, T a, T b) {
  if (op == RowOp::kMax || op == RowOp::kMin) {
    if constexpr (!std::is_integral_v<T>)
      if (a != a || b != b) return a != a ? a : b;
    return (op == RowOp::kMax) == (a > b) ? a : b;
  }
  return a + b;
}

// Reduces `v` over the block; every thread gets the result.
template <typename T>
__device__ T block_reduce(RowOp op, T v, T* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s)
      shared[threadIdx.x] = combine(op, shared[threadIdx.x], shared[threadIdx.x + s]);
    __syncthreads();
  }
  T r = shared[0];
  __syncthreads();
  return r;
}

}  // namespace inplace::cuda::row_reduce
