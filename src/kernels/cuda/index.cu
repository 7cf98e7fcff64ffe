// Indexed reads and writes on the device (index_select, embedding, gather; index_copy,
// kv_cache_update): positions come from device memory, so a decode step never needs the host
// to know them. A position outside the indexed dim is never dereferenced.
#include "backend/device_runtime.h"
#include "kernels/cuda/device_common.cuh"

namespace inplace::cuda {

namespace {

__device__ inline int64_t position(const IndexMap& m, int64_t i) {
  int64_t p = load<int64_t>(m.index, i);
  if (m.coord_dim >= 0) {
    int64_t rest = i;
    for (int d = m.values.ndim - 1; d > m.coord_dim; --d) rest /= m.values.size[d];
    p += rest % m.values.size[m.coord_dim];
  }
  if (m.wrap_negative && p < 0) p += m.extent;
  return p;
}

__device__ inline void raise_position(const IndexMap& m) {
  if (m.error && atomicCAS(m.error, 0, kDeviceErrorPosition) == 0) m.error[1] = m.error_step;
}

__global__ void read_kernel(IndexMap m, int64_t n) {
  pdl_begin();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t p = position(m, i);
    const bool inside = p >= 0 && p < m.extent;
    if (!inside) raise_position(m);
    const double v = inside ? load_at<double>(m.strided.data, m.strided.dtype,
                                              offset_of(m.strided, i) + p * m.unit)
                            : 0.0;
    // Integers move exactly through the int64 path.
    if (m.values.dtype == DType::kInt64 || m.values.dtype == DType::kInt32)
      store<int64_t>(m.values, i,
                     inside ? load_at<int64_t>(m.strided.data, m.strided.dtype,
                                               offset_of(m.strided, i) + p * m.unit)
                            : 0);
    else
      store<double>(m.values, i, v);
  }
}

__global__ void write_kernel(IndexMap m, int64_t n) {
  pdl_begin();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t p = position(m, i);
    if (p < 0 || p >= m.extent) {
      raise_position(m);
      continue;
    }
    const int64_t dst = offset_of(m.strided, i) + p * m.unit;
    if (m.strided.dtype == DType::kInt64 || m.strided.dtype == DType::kInt32)
      store_at<int64_t>(m.strided.data, m.strided.dtype, dst, load<int64_t>(m.values, i));
    else
      store_at<double>(m.strided.data, m.strided.dtype, dst, load<double>(m.values, i));
  }
}

}  // namespace

void index_read(const IndexMap& m, void* stream) {
  const int64_t n = numel(m.values);
  if (n == 0) return;
  launch_pdl(read_kernel, blocks_for(n), 256, as_stream(stream), m, n);
  IP_CUDA_CHECK(cudaGetLastError(), "index read");
}

void index_write(const IndexMap& m, void* stream) {
  const int64_t n = numel(m.values);
  if (n == 0) return;
  launch_pdl(write_kernel, blocks_for(n), 256, as_stream(stream), m, n);
  IP_CUDA_CHECK(cudaGetLastError(), "index write");
}

}  // namespace inplace::cuda
