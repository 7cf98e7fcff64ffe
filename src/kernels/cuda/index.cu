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

__device__ inline void read(const IndexMap& m, int64_t n) {
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

// The elements of one index map (F: read, write_rows_f32), or of two in one launch with
// blockIdx.y picking the map (a rotary table's cos and sin rows, a layer's k and v writes).
using MapFn = void (*)(const IndexMap&, int64_t);

template <MapFn F>
__global__ void map_kernel(IndexMap m, int64_t n) {
  pdl_begin();
  F(m, n);
}

template <MapFn F>
__global__ void map_pair_kernel(IndexMap a, int64_t na, IndexMap b, int64_t nb) {
  pdl_begin();
  if (blockIdx.y == 0)
    F(a, na);
  else
    F(b, nb);
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

// A write of whole float32 rows (kv_cache_update at a decode step: [B, H, L, D] rows of D into
// a cache): one float4 a thread, the row's coordinates found once per float4 instead of an
// offset walk per element. Same positions, same checks as write_kernel.
__device__ inline void write_rows_f32(const IndexMap& m, int64_t n4) {
  const Operand& v = m.values;
  const int64_t H = v.size[1], L = v.size[2], D4 = v.size[3] / 4;
  for (int64_t i4 = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i4 < n4;
       i4 += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i4 % D4 * 4, row = i4 / D4, l = row % L, h = row / L % H, b = row / L / H;
    int64_t p = m.index.is_number
                    ? m.index.i
                    : load_at<int64_t>(m.index.data, m.index.dtype,
                                       b * m.index.stride[0] + h * m.index.stride[1] +
                                           l * m.index.stride[2] + c * m.index.stride[3]);
    if (m.coord_dim == 2) p += l;
    if (m.wrap_negative && p < 0) p += m.extent;
    if (p < 0 || p >= m.extent) {
      raise_position(m);
      continue;
    }
    const float4 x =
        *reinterpret_cast<const float4*>(reinterpret_cast<const float*>(v.data) + b * v.stride[0] +
                                         h * v.stride[1] + l * v.stride[2] + c);
    *reinterpret_cast<float4*>(reinterpret_cast<float*>(m.strided.data) + b * m.strided.stride[0] +
                               h * m.strided.stride[1] + c + p * m.unit) = x;
  }
}

// The conditions of write_rows_f32: float32 4-D values and target, unit stride along
// rows of a multiple of 4, every other stride a multiple of 4, 16-byte aligned data, the
// position per row (coord_dim 2 or none) and the target's stride 0 along the indexed dim.
bool rows_f32(const IndexMap& m) {
  const Operand &v = m.values, &s = m.strided;
  if (v.dtype != DType::kFloat32 || s.dtype != DType::kFloat32 || v.ndim != 4 || s.ndim != 4 ||
      v.is_number || (m.coord_dim != -1 && m.coord_dim != 2))
    return false;
  if (v.size[3] % 4 != 0 || v.stride[3] != 1 || s.stride[3] != 1 || s.stride[2] != 0 ||
      m.unit % 4 != 0)
    return false;
  if (!m.index.is_number && (m.index.ndim != 4 || m.index.stride[3] != 0)) return false;
  for (int d = 0; d < 3; ++d)
    if (v.stride[d] % 4 != 0 || s.stride[d] % 4 != 0) return false;
  return reinterpret_cast<uintptr_t>(v.data) % 16 == 0 &&
         reinterpret_cast<uintptr_t>(s.data) % 16 == 0;
}

}  // namespace

void index_read(const IndexMap& m, void* stream) {
  const int64_t n = numel(m.values);
  if (n == 0) return;
  launch_pdl(map_kernel<read>, blocks_for(n), 256, as_stream(stream), m, n);
  IP_CUDA_CHECK(cudaGetLastError(), "index read");
}

void index_read_pair(const IndexMap& a, const IndexMap& b, void* stream) {
  const int64_t na = numel(a.values), nb = numel(b.values);
  if (na == 0 || nb == 0) {
    index_read(a, stream);
    index_read(b, stream);
    return;
  }
  launch_pdl(map_pair_kernel<read>, dim3(blocks_for(std::max(na, nb)), 2), 256, as_stream(stream),
             a, na, b, nb);
  IP_CUDA_CHECK(cudaGetLastError(), "index read");
}

void index_write(const IndexMap& m, void* stream) {
  const int64_t n = numel(m.values);
  if (n == 0) return;
  if (rows_f32(m)) {
    launch_pdl(map_kernel<write_rows_f32>, blocks_for(n / 4), 256, as_stream(stream), m, n / 4);
  } else {
    launch_pdl(write_kernel, blocks_for(n), 256, as_stream(stream), m, n);
  }
  IP_CUDA_CHECK(cudaGetLastError(), "index write");
}

void index_write_pair(const IndexMap& a, const IndexMap& b, void* stream) {
  const int64_t na = numel(a.values), nb = numel(b.values);
  if (na == 0 || nb == 0 || !rows_f32(a) || !rows_f32(b)) {
    index_write(a, stream);
    index_write(b, stream);
    return;
  }
  const unsigned blocks = blocks_for(std::max(na, nb) / 4);
  launch_pdl(map_pair_kernel<write_rows_f32>, dim3(blocks, 2), 256, as_stream(stream), a, na / 4, b,
             nb / 4);
  IP_CUDA_CHECK(cudaGetLastError(), "index write");
}

}  // namespace inplace::cuda
