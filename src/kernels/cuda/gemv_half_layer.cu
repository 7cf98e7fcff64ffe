// The half GEMV's LayerNorm and GELU forms (gemv_half.h): GPT-2's products once its Conv1D weights
// are prepared in [out, in] rows (ln_1 before c_attn, ln_2 before c_fc and the GELU after it,
// ln_f before the LM head). The same kernels as gemv_half.cu's (gemv_half_launch.cuh), with the
// LayerNorm prologue (kLayer) or the gelu_new epilogue (kGeluNew). Compiled with --fmad=false:
// the epilogue repeats the fused_pointwise interpreter's operations and roundings, which must not
// be contracted differently (pointwise_device.cuh); the products' sums are then unfused
// multiplies and adds, the same order.
#include "kernels/cuda/gemv_half.h"
#include "kernels/cuda/gemv_half_launch.cuh"

namespace inplace::cuda {

namespace {

using namespace half_gemv;

template <typename T>
void launch_layer(const GemvHalf& g, cudaStream_t s) {
  if (g.epilogue == GemvEpilogue::kGeluNew) {
    if (g.norm_layer) return launch<T, GemvEpilogue::kGeluNew, true>(g, s);
    return launch<T, GemvEpilogue::kGeluNew>(g, s);
  }
  IP_CHECK(g.epilogue == GemvEpilogue::kNone && g.norm_layer, kInternal,
           "[cuda] fused_linear: a LayerNorm form with a residual or a gated epilogue");
  launch<T, GemvEpilogue::kNone, true>(g, s);
}

}  // namespace

void gemv_half_layer(const GemvHalf& g, void* stream) {
  const cudaStream_t s = as_stream(stream);
  if (g.dtype == DType::kBFloat16)
    launch_layer<__nv_bfloat16>(g, s);
  else
    launch_layer<__half>(g, s);
  IP_CUDA_CHECK(cudaGetLastError(), "fused_linear");
}

}  // namespace inplace::cuda
