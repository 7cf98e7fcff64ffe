// fused_pointwise on CUDA: one thread per output element interprets the program
// (ops/pointwise_program.h) with the interpreter of pointwise_device.cuh, whose registers hold
// what the unfused chain would hold there, each op the unfused kernels' own function. What could
// differ from the unfused chain, fused_pointwise_refusal (the kernel's supports) refuses.
// fused_rows: a block a row; each reduction in program order is one pass over the row (every
// thread its columns, the program run up to the reduction's operand for each, then the row
// reduction kernel's block reduction), its value kept in shared memory; then a pass that runs the
// whole program for each column.
#include "kernels/cuda/element_jobs.cuh"
#include "kernels/cuda/fused_pointwise.h"
#include "kernels/cuda/pointwise_device.cuh"
#include "kernels/cuda/row_reduce_device.cuh"

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

using pointwise_device::Reg;

__device__ inline RowOp row_op_of(int32_t op) {
  switch (static_cast<pointwise::ReduceOp>(op)) {
    case pointwise::ReduceOp::kSum:
      return RowOp::kSum;
    case pointwise::ReduceOp::kMean:
      return RowOp::kMean;
    case pointwise::ReduceOp::kMax:
      return RowOp::kMax;
    default:
      return RowOp::kMin;
  }
}

// fused_rows' program at output element e, its reductions reading the row's values: to
// instruction `stop` (its operand register; -1: the stored result), that register's dtype in *t.
__device__ inline Reg run_row_element(const FusedPointwise& p, int64_t e, const Reg* reduced,
                                      int stop, DType* t) {
  auto load = [&](int32_t i, DType d) {
    const Operand& o = p.inputs[i];
    return pointwise_device::load_reg(o.data, d, offset_of(o, e));
  };
  return pointwise_device::run<true>(p.code, p.reg, p.n_code, load, t, reduced, stop);
}

// Row r's reduction q (an instruction of compute type C, float or double) into reduced[q], as
// row_kernel<C> computes the unfused reduction of the operand: each thread's columns in order
// (an extreme starting from column 0), the block's tree, a mean divided in C, the value stored
// at the reduction's dtype and loaded back.
template <typename C>
__device__ void reduce_row(const FusedPointwise& p, int64_t r, int64_t cols, int q, Reg* reduced,
                           C* shared) {
  const RowOp op = row_op_of(p.code[q].b);
  auto x = [&](int64_t c) {
    DType t = DType::kFloat32;
    return pointwise_device::get<C>(run_row_element(p, r * cols + c, reduced, q, &t));
  };
  const bool extreme = op == RowOp::kMax || op == RowOp::kMin;
  C acc = extreme ? x(0) : C(0);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) acc = row_reduce::combine(op, acc, x(c));
  acc = row_reduce::block_reduce(op, acc, shared);
  if (op == RowOp::kMean) acc = acc / static_cast<C>(cols);
  if (threadIdx.x == 0)
    reduced[q] = pointwise_device::stored<C>(acc, static_cast<DType>(p.code[q].dtype));
}

__global__ void __launch_bounds__(row_reduce::kThreads)
    fused_rows_kernel(FusedPointwise p, int64_t rows, int64_t cols) {
  pdl_begin();
  __shared__ Reg reduced[pointwise::kMaxInstructions];
  __shared__ float shared_f[row_reduce::kThreads];
  __shared__ double shared_d[row_reduce::kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    for (int q = 0; q < p.n_code; ++q) {
      if (p.code[q].op != pointwise::Opcode::kReduce) continue;
      if (static_cast<DType>(p.code[q].dtype) == DType::kFloat64)
        reduce_row<double>(p, r, cols, q, reduced, shared_d);
      else
        reduce_row<float>(p, r, cols, q, reduced, shared_f);
      __syncthreads();  // reduced[q] is visible to the block
    }
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const int64_t e = r * cols + c;
      DType t = DType::kFloat32;
      const Reg v = run_row_element(p, e, reduced, -1, &t);
      pointwise_device::store_reg(p.out.data, t, offset_of(p.out, e), v);
    }
    __syncthreads();  // the next row's values replace this row's
  }
}

}  // namespace

void fused_rows(const FusedPointwise& p, int64_t cols, void* stream) {
  const int64_t rows = cols > 0 ? numel(p.out) / cols : 0;
  if (rows == 0) return;
  const unsigned grid = static_cast<unsigned>(rows < 65535 * 4 ? rows : 65535 * 4);
  launch_pdl(fused_rows_kernel, grid, row_reduce::kThreads, as_stream(stream), p, rows, cols);
  IP_CUDA_CHECK(cudaGetLastError(), "fused_rows");
}

void fused_pointwise(const FusedPointwise& p, void* stream) {
  launch_job<FusedPointwise, run_program>(p, numel(p.out), as_stream(stream));
  IP_CUDA_CHECK(cudaGetLastError(), "fused_pointwise");
}

void fused_pointwise_pair(const FusedPointwise& a, const FusedPointwise& b, void* stream) {
  launch_job_pair<FusedPointwise, run_program>(a, numel(a.out), b, numel(b.out), as_stream(stream));
  IP_CUDA_CHECK(cudaGetLastError(), "fused_pointwise");
}

}  // namespace inplace::cuda
