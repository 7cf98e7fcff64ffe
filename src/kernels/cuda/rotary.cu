// rotary_embedding on the device: out = x * cos + rotate_half(x) * sin, rotate_half(x) =
// cat(-x[..., d/2:], x[..., :d/2]); the chain's float operations in its order.
#include "kernels/cuda/device_common.cuh"

namespace inplace::cuda {

namespace {

__global__ void rotary_kernel(Operand out, Operand x, Operand c, Operand s, int64_t n) {
  pdl_begin();
  const int last = out.ndim - 1;
  const int64_t d = out.size[last], half = d / 2;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = i % d;
    const int64_t xo = offset_of(x, i);
    const float xv = load_at<float>(x.data, x.dtype, xo);
    const float other =
        load_at<float>(x.data, x.dtype, xo + (j < half ? half : -half) * x.stride[last]);
    const float rot = j < half ? -other : other;
    const float a = xv * load_at<float>(c.data, c.dtype, offset_of(c, i));
    const float b = rot * load_at<float>(s.data, s.dtype, offset_of(s, i));
    store_at<float>(out.data, out.dtype, offset_of(out, i), a + b);
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
