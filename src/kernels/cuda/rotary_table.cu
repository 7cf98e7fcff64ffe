// rotary_table on the device (ops/rotary_table_ops.cpp): one thread an element, with the unfused
// kernels' own arithmetic (an integer position converted by static_cast<float> as the cast
// kernel converts it, __fmul_rn and __fadd_rn for the product and its + 0, elementwise's cosf or
// sinf, one rounding to the result's dtype), so the step is bitwise the chain it replaces on this
// backend. Compiled with --fmad=false as elementwise.cu.
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/element_jobs.cuh"
#include "kernels/cuda/elementwise_device.cuh"
#include "kernels/cuda/rotary_table.h"

namespace inplace::cuda {

namespace {

// positions[b, 0, s] as float32; an integer one through its int64 value, static_cast<float> as the
// cast kernel converts it.
__device__ inline float position_at(const Operand& p, int64_t b, int64_t s) {
  const int64_t off = (p.size[0] == 1 ? 0 : b) * p.stride[0] + s * p.stride[2];
  return p.dtype == DType::kFloat32 ? load_at<float>(p.data, p.dtype, off)
                                    : static_cast<float>(load_at<int64_t>(p.data, p.dtype, off));
}

__device__ inline void table_element(const RotaryTable& t, int64_t e) {
  const Operand &o = t.out, &f = t.inv;
  const uint32_t two_h = static_cast<uint32_t>(o.size[2]), h = two_h / 2;
  const uint32_t S = static_cast<uint32_t>(o.size[1]), i = static_cast<uint32_t>(e);
  const uint32_t j = i % two_h, row = i / two_h, s = row % S, b = row / S;
  const float inv = reinterpret_cast<const float*>(
      f.data)[(f.size[0] == 1 ? 0 : int64_t{b}) * f.stride[0] + int64_t{j % h} * f.stride[1]];
  const float freq = __fadd_rn(__fmul_rn(inv, position_at(t.positions, b, s)), 0.0f);
  const float v =
      unary_op<float>(static_cast<int>(t.sine ? UnaryOp::kSin : UnaryOp::kCos), freq, false);
  store_at<float>(o.data, o.dtype,
                  int64_t{b} * o.stride[0] + int64_t{s} * o.stride[1] + int64_t{j} * o.stride[2],
                  v);
}

}  // namespace

void rotary_table(const RotaryTable& t, void* stream) {
  launch_job<RotaryTable, table_element>(t, numel(t.out), as_stream(stream));
  IP_CUDA_CHECK(cudaGetLastError(), "rotary_table");
}

void rotary_table_pair(const RotaryTable& a, const RotaryTable& b, void* stream) {
  launch_job_pair<RotaryTable, table_element>(a, numel(a.out), b, numel(b.out), as_stream(stream));
  IP_CUDA_CHECK(cudaGetLastError(), "rotary_table");
}

}  // namespace inplace::cuda
