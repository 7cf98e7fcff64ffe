// The cpu kernel families, each registering its ops into the kernel table (one file each), as
// kernels/cuda/registration.h lists the CUDA ones.
#pragma once
#include <memory>

#include "backend/backend.h"
#include "backend/kernel_table.h"

namespace inplace {

// The cpu backend: every kernel family below and the copy-back kernel (cpu_backend.cpp).
void register_cpu_backend(KernelTable& table);

}  // namespace inplace

namespace inplace::cpu {

// The cpu backend: prepares a plan into a CpuExecutable (cpu_executable.cpp).
std::unique_ptr<Backend> make_backend();
void register_elementwise_kernels(KernelTable& table);        // elementwise_kernels.cpp
void register_kv_cache_kernels(KernelTable& table);           // kv_cache_update.cpp
void register_rotary_kernels(KernelTable& table);             // rotary.cpp
void register_fused_linear_kernels(KernelTable& table);       // fused_linear.cpp
void register_fused_addmm_kernels(KernelTable& table);        // fused_addmm.cpp
void register_getitem_kernels(KernelTable& table);            // getitem.cpp
void register_index_kernels(KernelTable& table);              // index_ops.cpp
void register_scatter_kernels(KernelTable& table);            // scatter_kernels.cpp
void register_view_scatter_kernels(KernelTable& table);       // view_scatter.cpp
void register_reduction_kernels(KernelTable& table);          // reduction_kernels.cpp
void register_scan_kernels(KernelTable& table);               // scan_kernels.cpp
void register_sort_kernels(KernelTable& table);               // sort_kernels.cpp
void register_conv_kernels(KernelTable& table);               // conv_kernels.cpp
void register_pointwise_extra_kernels(KernelTable& table);    // pointwise_extra_kernels.cpp
void register_creation_kernels(KernelTable& table);           // creation_kernels.cpp
void register_sample_row_kernels(KernelTable& table);         // sample_row.cpp
void register_rotary_table_kernels(KernelTable& table);       // rotary_table.cpp
void register_matrix_kernels(KernelTable& table);             // matrix_kernels.cpp
void register_matrix_batch_kernels(KernelTable& table);       // matrix_kernels.cpp
void register_einsum_kernels(KernelTable& table);             // einsum_kernels.cpp
void register_nn_kernels(KernelTable& table);                 // nn_kernels.cpp
void register_upcast_rms_norm_kernels(KernelTable& table);    // upcast_rms_norm.cpp
void register_rounded_attention_kernels(KernelTable& table);  // rounded_attention.cpp
void register_fused_pointwise_kernels(KernelTable& table);    // fused_pointwise.cpp
void register_fused_rows_kernels(KernelTable& table);         // fused_rows.cpp

}  // namespace inplace::cpu
