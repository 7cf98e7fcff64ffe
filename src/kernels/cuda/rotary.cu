// rotary_embedding on the device: out = x * cos + rotate_half(x) * sin, rotate_half(x) =
// cat(-x[..., d/2:], x[..., :d/2]); the chain's float operations in its order, with its rounding
// points: each product and the sum rounded to the dtype (bfloat16, float16; identities at
// float32), as the cpu kernel. Products and sum are __fmul_rn/__fadd_rn so that nvcc cannot
// contract them into one fma (which the chain's separate kernels never do).
#include "kernels/cuda/device_common.cuh"

namespace inplace::cuda {

namespace {

// v rounded to dtype t (to nearest even), back in float.
__device__ inline float round_to(DType t, float v) {
  if (t == DType::kBFloat16) return __bfloat162float(__float2bfloat16_rn(v));
  if (t == DType::kFloat16) return __half2float(__float2half_rn(v));
  return v;
}

__global__ void rotary_kernel(Operand out, Operand x, Operand c, Operand s, int64_t n) {
  pdl_begin();
  const int last = out.ndim - 1;
  const int64_t d = out.size[last], half = d / 2;
  const DType t = out.dtype;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = i % d;
    const int64_t xo = offset_of(x, i);
    const float xv = load_at<float>(x.data, x.dtype, xo);
    const float other =
        load_at<float>(x.data, x.dtype, xo + (j < half ? half : -half) * x.stride[last]);
    const float rot = j < half ? -other : other;
    const float a = round_to(t, __fmul_rn(xv, load_at<float>(c.data, c.dtype, offset_of(c, i))));
    const float b = round_to(t, __fmul_rn(rot, load_at<float>(s.data, s.dtype, offset_of(s, i))));
    store_at<float>(out.data, out.dtype, offset_of(out, i), __fadd_rn(a, b));
  }
}

}  // namespace

void rotary(const Operand& out, const Operand& x, const Operand& cos, const Operand& sin,
            void* stream) {
  const int64_t n = numel(out);
  if (n == 0) return;
  launch_pdl(rotary_kernel, blocks_for(n), 256, as_stream(stream), out, x, cos, sin, n);
  IP_CUDA_CHECK(cudaGetLastError(), "rotary_embedding");
}

}  // namespace inplace::cuda
