// fused_pointwise on CUDA: one thread per output element interprets the program
// (ops/pointwise_program.h) with the interpreter of pointwise_device.cuh, whose registers hold
// what the unfused chain would hold there, each op the unfused kernels' own function. What could
// differ from the unfused chain, fused_pointwise_refusal (the kernel's supports) refuses.
#include <algorithm>

#include "kernels/cuda/fused_pointwise.h"
#include "kernels/cuda/pointwise_device.cuh"

namespace inplace::cuda {

namespace {

__device__ inline void run_program(const FusedPointwise& p, int64_t e) {
  auto load = [&](int32_t i, DType t) {
    const Operand& x = p.inputs[i];
    return pointwise_device::load_reg(x.data, t, offset_of(x, e));
  };
  DType t = DType::kFloat32;
  const pointwise_device::Reg r = pointwise_device::run(p.code, p.reg, p.n_code, load, &t);
  pointwise_device::store_reg(p.out.data, t, offset_of(p.out, e), r);
}

__global__ void fused_pointwise_kernel(const __grid_constant__ FusedPointwise p, int64_t n) {
  pdl_begin();
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x)
    run_program(p, e);
}

struct FusedPointwisePair {
  FusedPointwise p[2];
  int64_t n[2];
};
static_assert(sizeof(FusedPointwisePair) < 32000, "a kernel's parameters hold at most 32764 bytes");

// Program blockIdx.y of the pair.
__global__ void fused_pointwise_pair_kernel(const __grid_constant__ FusedPointwisePair pair) {
  pdl_begin();
  const FusedPointwise& p = pair.p[blockIdx.y];
  const int64_t n = pair.n[blockIdx.y];
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x)
    run_program(p, e);
}

}  // namespace

void fused_pointwise(const FusedPointwise& p, void* stream) {
  const int64_t n = numel(p.out);
  if (n == 0) return;
  launch_pdl(fused_pointwise_kernel, blocks_for(n), 256, as_stream(stream), p, n);
  IP_CUDA_CHECK(cudaGetLastError(), "fused_pointwise");
}

void fused_pointwise_pair(const FusedPointwise& a, const FusedPointwise& b, void* stream) {
  FusedPointwisePair pair;
  pair.p[0] = a;
  pair.p[1] = b;
  pair.n[0] = numel(a.out);
  pair.n[1] = numel(b.out);
  const unsigned blocks = std::max(blocks_for(pair.n[0]), blocks_for(pair.n[1]));
  launch_pdl(fused_pointwise_pair_kernel, dim3(blocks, 2), 256, as_stream(stream), pair);
  IP_CUDA_CHECK(cudaGetLastError(), "fused_pointwise");
}

}  // namespace inplace::cuda
