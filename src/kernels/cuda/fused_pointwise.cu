// fused_pointwise on CUDA: one thread per output element interprets the program
// (ops/pointwise_program.h) with the interpreter of pointwise_device.cuh, whose registers hold
// what the unfused chain would hold there, each op the unfused kernels' own function. What could
// differ from the unfused chain, fused_pointwise_refusal (the kernel's supports) refuses.
#include "kernels/cuda/element_jobs.cuh"
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

}  // namespace

void fused_pointwise(const FusedPointwise& p, void* stream) {
  launch_job<FusedPointwise, run_program>(p, numel(p.out), as_stream(stream));
  IP_CUDA_CHECK(cudaGetLastError(), "fused_pointwise");
}

void fused_pointwise_pair(const FusedPointwise& a, const FusedPointwise& b, void* stream) {
  launch_job_pair<FusedPointwise, run_program>(a, numel(a.out), b, numel(b.out), as_stream(stream));
  IP_CUDA_CHECK(cudaGetLastError(), "fused_pointwise");
}

}  // namespace inplace::cuda
