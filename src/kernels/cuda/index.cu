// Indexed reads and writes on the device (index_select, embedding, gather; index_copy,
// kv_cache_update): positions come from device memory, so a decode step never needs the host
// to know them. A position outside the indexed dim is never dereferenced.
#include "kernels/cuda/index_device.cuh"

namespace inplace::cuda {

namespace {

using indexed::read;
using indexed::write;
using indexed::write_rows_f32;

// The elements of one index map (F: read, write, write_rows_f32), or of two in one launch with
// blockIdx.y picking the map (a rotary table's cos and sin rows, a layer's k and v writes).
using MapFn = void (*)(const IndexMap&, int64_t, int64_t, int64_t);

template <MapFn F>
__global__ void map_kernel(IndexMap m, int64_t n) {
  pdl_begin();
  F(m, n, blockIdx.x, gridDim.x);
}

template <MapFn F>
__global__ void map_pair_kernel(IndexMap a, int64_t na, IndexMap b, int64_t nb) {
  pdl_begin();
  if (blockIdx.y == 0)
    F(a, na, blockIdx.x, gridDim.x);
  else
    F(b, nb, blockIdx.x, gridDim.x);
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
    launch_pdl(map_kernel<write>, blocks_for(n), 256, as_stream(stream), m, n);
  }
  IP_CUDA_CHECK(cudaGetLastError(), "index write");
}

void index_write_pair(const IndexMap& a, const IndexMap& b, void* stream) {
  const int64_t na = numel(a.values), nb = numel(b.values);
  if (na == 0 || nb == 0) {
    index_write(a, stream);
    index_write(b, stream);
    return;
  }
  if (!rows_f32(a) || !rows_f32(b)) {  // bfloat16 or float16 caches: element by element
    launch_pdl(map_pair_kernel<write>, dim3(blocks_for(std::max(na, nb)), 2), 256,
               as_stream(stream), a, na, b, nb);
    IP_CUDA_CHECK(cudaGetLastError(), "index write");
    return;
  }
  const unsigned blocks = blocks_for(std::max(na, nb) / 4);
  launch_pdl(map_pair_kernel<write_rows_f32>, dim3(blocks, 2), 256, as_stream(stream), a, na / 4, b,
             nb / 4);
  IP_CUDA_CHECK(cudaGetLastError(), "index write");
}

}  // namespace inplace::cuda
