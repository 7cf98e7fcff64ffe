// Indexed reads and writes as device code, over the elements of a map's `values` in a
// grid-stride loop of `grid` blocks of which this is `block`: index.cu launches them (one launch
// a map or a pair). A position outside the indexed dim is never dereferenced; it raises the
// map's device error flag when one is set.
#pragma once
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/device_runtime.h"

namespace inplace::cuda::indexed {

__device__ inline int64_t position(const IndexMap& m, int64_t i) {
  int64_t p = load<int64_t>(m.index, i);
  if (m.coord_dim >= 0) {
    int64_t rest = i;
    for (int d = m.values.ndim - 1; d > m.coord_dim; --d) rest = div_nonneg(rest, m.values.size[d]);
    p += mod_nonneg(rest, m.values.size[m.coord_dim]);
  }
  if (m.wrap_negative && p < 0) p += m.extent;
  return p;
}

__device__ inline void raise_position(const IndexMap& m) {
  if (m.error && atomicCAS(m.error, 0, kDeviceErrorPosition) == 0) m.error[1] = m.error_step;
}

__device__ inline void read(const IndexMap& m, int64_t n, int64_t block, int64_t grid) {
  for (int64_t i = block * int64_t(blockDim.x) + threadIdx.x; i < n; i += grid * blockDim.x) {
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

__device__ inline void write(const IndexMap& m, int64_t n, int64_t block, int64_t grid) {
  for (int64_t i = block * int64_t(blockDim.x) + threadIdx.x; i < n; i += grid * blockDim.x) {
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
__device__ inline void write_rows_f32(const IndexMap& m, int64_t n4, int64_t block, int64_t grid) {
  const Operand& v = m.values;
  const int64_t H = v.size[1], L = v.size[2], D4 = v.size[3] / 4;
  for (int64_t i4 = block * int64_t(blockDim.x) + threadIdx.x; i4 < n4; i4 += grid * blockDim.x) {
    const int64_t c = mod_nonneg(i4, D4) * 4, row = div_nonneg(i4, D4), l = mod_nonneg(row, L),
                  hb = div_nonneg(row, L), h = mod_nonneg(hb, H), b = div_nonneg(hb, H);
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

}  // namespace inplace::cuda::indexed
