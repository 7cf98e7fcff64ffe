// The CUDA backend's registration: its allocator (cudaMalloc, zero-filled like the cpu's) and
// every kernel family of src/kernels/cuda, called once when the kernel table is built.
#include <cuda_runtime.h>

#include "backend/backend.h"
#include "backend/fusion_preferences.h"
#include "backend/kernel_table.h"
#include "core/device_allocator.h"
#include "core/error.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/registration.h"

namespace inplace {

namespace {

void check(cudaError_t e, const char* what, Device device, size_t nbytes) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clear the sticky-free error state for the next call
  IP_FAIL(kInternal, "[cuda] ", what, " of ", nbytes, " bytes on ", device.str(),
          " failed: ", cudaGetErrorString(e));
}

class CudaAllocator final : public DeviceAllocator {
 public:
  void* allocate(Device device, size_t nbytes) const override {
    check(cudaSetDevice(device.index), "selecting the device for an allocation", device, nbytes);
    void* p = nullptr;
    check(cudaMalloc(&p, nbytes ? nbytes : 64), "cudaMalloc", device, nbytes);
    check(cudaMemset(p, 0, nbytes ? nbytes : 64), "zero-filling", device, nbytes);
    // The fill runs on the legacy default stream, which work on a non-blocking stream (a torch
    // stream, a session's queue) does not wait for: finish it before the memory is handed out.
    // Allocation is rare (a context's first call, a session's state), never per step.
    check(cudaStreamSynchronize(nullptr), "zero-filling", device, nbytes);
    return p;
  }
  void release(Device, void* data) const override { cudaFree(data); }
  void copy_to_host(void* host, const void* src, size_t n) const override {
    if (n) check(cudaMemcpy(host, src, n, cudaMemcpyDeviceToHost), "copy to host", {}, n);
  }
  void copy_from_host(void* dst, const void* host, size_t n) const override {
    if (n) check(cudaMemcpy(dst, host, n, cudaMemcpyHostToDevice), "copy from host", {}, n);
  }
  void copy_on_device(void* dst, const void* src, size_t n) const override {
    if (n) check(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToDevice), "copy on device", {}, n);
  }
};

int cuda_device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

}  // namespace

void register_cuda_backend(KernelTable& table) {
  static const CudaAllocator allocator;
  register_device_allocator(DeviceType::kCuda, &allocator);
  table.add_device_count(DeviceType::kCuda, cuda_device_count);
  cuda::register_elementwise_kernels(table);
  cuda::register_creation_kernels(table);
  cuda::register_reduction_kernels(table);
  cuda::register_matrix_kernels(table);
  cuda::register_index_kernels(table);
  cuda::register_attention_kernels(table);
  cuda::register_rotary_kernels(table);
  cuda::register_fused_linear_kernels(table);
  cuda::register_fused_addmm_kernels(table);
  cuda::register_fused_pointwise_kernels(table);
  cuda::register_topk_kernels(table);
  cuda::register_sample_row_kernels(table);
  cuda::register_rotary_table_kernels(table);
  register_backend(DeviceType::kCuda, cuda::make_backend());
}

// A decode step is what one pass of the GEMV serves (kGemvRows rows a block); each launch costs
// a few microseconds whatever it moves, so q/k/v as one product, the norms inside the products
// they feed and a chain of elementwise ops as one launch (fused_pointwise) pay.
FusionPreferences cuda_fusion_preferences() {
  FusionPreferences p;
  p.decode_max_rows = cuda::kGemvRows;
  p.merge_sibling_linears = true;
  p.fuse_norm_prologues = true;
  p.fuse_pointwise = true;
  // fused_rows' kernel (fused_pointwise.cu) has not run on a GPU yet: its steps are made only
  // where asked (CompileOptions::fuse_rows, INPLACE_FUSE_ROWS=1) until the GPU suite has run it.
  p.fuse_rows = false;
  // GPT-2's Conv1D weights as [out, in] copies (prepare_weights): its products are then the half
  // GEMV with the LayerNorm and GELU forms of gemv_half_layer.cu; GPT-2 medium bf16 on an H100
  // stepped in 0.409 ms so, against 0.464 ms reading the weights as they lie (gemv_in_out.cu,
  // fused_addmm) and 0.417 ms preparing only the products no LayerNorm feeds (one run of
  // bench/hf_variants.py; docs/performance.md). The copies cost the weights' bytes once more.
  p.prepare_weights = true;
  return p;
}

}  // namespace inplace
