// The CUDA kernel families, each registering its ops into the kernel table (one file each).
#pragma once
#include <memory>

#include "backend/backend.h"
#include "backend/kernel_table.h"
#include "kernels/cuda/launch.h"

namespace inplace {

// The CUDA backend: its allocator, device count and every kernel family below (cuda_backend.cpp).
void register_cuda_backend(KernelTable& table);

}  // namespace inplace

namespace inplace::cuda {

void register_elementwise_kernels(KernelTable& table);      // elementwise_kernels.cpp
void register_creation_kernels(KernelTable& table);         // creation_kernels.cpp
void register_reduction_kernels(KernelTable& table);        // reduction_kernels.cpp
void register_matrix_kernels(KernelTable& table);           // matrix_kernels.cpp (cuBLAS)
void register_index_kernels(KernelTable& table);            // index_kernels.cpp
void register_attention_kernels(KernelTable& table);        // attention_kernels.cpp
void register_rotary_kernels(KernelTable& table);           // rotary_kernels.cpp
void register_fused_linear_kernels(KernelTable& table);     // fused_linear_kernels.cpp
void register_fused_addmm_kernels(KernelTable& table);      // gemv_in_out_kernels.cpp
void register_fused_pointwise_kernels(KernelTable& table);  // fused_pointwise_kernels.cpp
void register_topk_kernels(KernelTable& table);             // topk_kernels.cpp
void register_sample_row_kernels(KernelTable& table);       // sample_row_kernels.cpp
void register_rotary_table_kernels(KernelTable& table);     // rotary_table_kernels.cpp
// The CUDA backend: prepares a plan into a CudaExecutable (cuda_executable.cpp).
std::unique_ptr<Backend> make_backend();

// kv_cache_update(cache, update, start, index) into outs[0] as an index write (index_kernels.cpp;
// also the GEMV's epilogue writes): slot l of row b goes to start[b] + l, or to index[l] /
// index[b, l]. Copies nothing: the caller copies cache into outs[0] first unless it is placed
// there.
IndexMap kv_cache_map(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx);

}  // namespace inplace::cuda
