// arange on the device, with the cpu kernel's arithmetic (double for floats, int64 otherwise).
#include "kernels/cuda/device_common.cuh"

namespace inplace::cuda {

namespace {

template <typename T>
__global__ void arange_kernel(Operand out, T start, T step, int64_t n) {
  pdl_begin();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store<T>(out, i, start + static_cast<T>(i) * step);
}

}  // namespace

void arange(const Operand& out, double start, double step, void* stream) {
  const int64_t n = numel(out);
  if (n == 0) return;
  if (compute_kind(out.dtype) == 2)
    launch_pdl(arange_kernel<int64_t>, blocks_for(n), 256, as_stream(stream), out,
               static_cast<int64_t>(start), static_cast<int64_t>(step), n);
  else
    launch_pdl(arange_kernel<double>, blocks_for(n), 256, as_stream(stream), out, start, step, n);
  IP_CUDA_CHECK(cudaGetLastError(), "arange");
}

}  // namespace inplace::cuda
