// The cpu backend's registration: every kernel family of src/kernels/cpu, called once when the
// kernel table is built, as register_cuda_backend does for src/kernels/cuda.
#include "backend/backend.h"
#include "backend/fusion_preferences.h"
#include "backend/kernel_table.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/registration.h"

namespace inplace {

void register_cpu_backend(KernelTable& table) {
  register_backend(DeviceType::kCpu, cpu::make_backend());
  cpu::register_elementwise_kernels(table);
  cpu::register_kv_cache_kernels(table);
  cpu::register_rotary_kernels(table);
  cpu::register_fused_linear_kernels(table);
  cpu::register_fused_addmm_kernels(table);
  cpu::register_getitem_kernels(table);
  cpu::register_index_kernels(table);
  cpu::register_scatter_kernels(table);
  cpu::register_view_scatter_kernels(table);
  cpu::register_reduction_kernels(table);
  cpu::register_scan_kernels(table);
  cpu::register_sort_kernels(table);
  cpu::register_conv_kernels(table);
  cpu::register_pointwise_extra_kernels(table);
  cpu::register_creation_kernels(table);
  cpu::register_sample_row_kernels(table);
  cpu::register_rotary_table_kernels(table);
  cpu::register_matrix_kernels(table);
  cpu::register_matrix_batch_kernels(table);
  cpu::register_einsum_kernels(table);
  cpu::register_nn_kernels(table);
  cpu::register_upcast_rms_norm_kernels(table);
  cpu::register_rounded_attention_kernels(table);
  cpu::register_fused_pointwise_kernels(table);
  cpu::register_fused_rows_kernels(table);
  // dst <- src, broadcast and cast: the engine's copy-back step.
  table.add_copy(DeviceType::kCpu, [](const Args& args, const std::vector<Tensor>& outs,
                                      const KernelContext&) { outs[0].copy_from(args[0].tensor); });
}

// A decode step is what one pass of the streaming GEMV serves; the products cost their bytes,
// not their launch, so merging siblings and joining norms gain nothing here. A weight stored
// [in, out] streams at ~24 GB/s through the row kernel (kernels/cpu/gemv_rows.h) against the
// read bandwidth (~34) for [out, in] rows: its prepared copy pays.
FusionPreferences cpu_fusion_preferences() {
  FusionPreferences p;
  p.decode_max_rows = cpu::kGemvMaxRows;
  p.fuse_pointwise = true;
  // A hand-written norm and softmax, [4, 2048], one thread (bench/fused_chains_bench.cpp,
  // docs/performance.md): one fused_rows step 95.8 us (bf16) and 55.4 us (float32) a call,
  // against 126 and 67 with the rows left out (the elementwise steps between the reductions
  // fused) and 106 and 54 unfused.
  p.fuse_rows = true;
  p.prepare_weights = true;
  return p;
}

}  // namespace inplace
