// The decode GEMV at a half activation dtype (gemv_half.h). One input row on the 16-byte path
// (a decode step) takes one of two resident kernels by the product's weight bytes and row length:
// task streams (gemv_half_stream.cuh) from kStreamBytes with rows of kStreamMinK or more, column
// blocks (gemv_half_columns.cuh) otherwise.
// Every other product (several rows, unaligned rows) takes gemv_half_kernel
// (gemv_half_launch.cuh): one warp per output column, eight columns a block, lanes striding along
// k, float32 accumulation, a warp reduction, then the epilogue rounding to T where the chain
// rounds. With a norm, its block first normalises each input row into shared memory as T (the
// value the chain's norm hands the product), its squares summed in double. A block of the
// rotated prefix takes four column pairs (j, j + d/2) of one head and exchanges the partners'
// rounded results through shared memory; the row writes store the finished value. The
// LayerNorm and GELU forms are gemv_half_layer.cu's.
#include "kernels/cuda/gemv_half.h"

#include "kernels/cuda/gemv_half_launch.cuh"

namespace inplace::cuda {

namespace {

using namespace half_gemv;

template <typename T>
void launch_epilogue(const GemvHalf& g, cudaStream_t s) {
  switch (g.epilogue) {
    case GemvEpilogue::kNone:
      return launch<T, GemvEpilogue::kNone>(g, s);
    case GemvEpilogue::kResidual:
      return launch<T, GemvEpilogue::kResidual>(g, s);
    case GemvEpilogue::kSwiGLU:
      return launch<T, GemvEpilogue::kSwiGLU>(g, s);
    case GemvEpilogue::kGeluNew:  // gemv_half_layer's
      break;
  }
}

}  // namespace

bool gemv_half_runs_writes(const GemvHalf& g) {
  return g.epilogue == GemvEpilogue::kNone && g.rows == 1 && g.n > 0;
}

bool gemv_half_runs_pre_norm(const GemvHalf& g) {
  const GemvPreNorm& p = g.pre;
  auto overlaps_x = [&](const void* q, int64_t bytes) {
    const char *a = static_cast<const char*>(q), *x = static_cast<const char*>(g.x);
    return q && a < x + g.k * 2 && x < a + bytes;  // T: 2 bytes
  };
  const int64_t row = g.k * 2, result = g.n * 2;  // bytes of x, and of y, bias and residual
  return p.x && p.w && g.norm_w && !g.norm_layer && g.n > 0 && stages_row_once(g) &&
         aligned16(p.x) && (!p.residual || aligned16(p.residual)) && (p.in_float || !p.w_float) &&
         !overlaps_x(p.x, row) && !overlaps_x(p.residual, row) &&
         !overlaps_x(p.w, g.k * (p.w_float ? 4 : 2)) && !overlaps_x(g.residual, result) &&
         !overlaps_x(g.bias, result) && !overlaps_x(g.y, result);
}

void gemv_half(const GemvHalf& g, void* stream) {
  if (g.rows == 0 || g.n == 0) return;
  IP_CHECK(g.more.count == 0 || g.epilogue != GemvEpilogue::kSwiGLU, kInternal,
           "[cuda] gated_mlp: a grouped product");
  IP_CHECK(g.n <= INT32_MAX, kInternal, "[cuda] fused_linear: ", g.n,
           " columns (the kernel places columns in 32-bit arithmetic)");
  IP_CHECK(!g.norm_w || g.k <= kGemvHalfMaxNormK, kInternal,
           "[cuda] fused_linear: a norm over more than ", kGemvHalfMaxNormK, " elements");
  IP_CHECK(g.n_writes == 0 || gemv_half_runs_writes(g), kInternal,
           "[cuda] fused_linear: row writes from a product that cannot run them");
  IP_CHECK(!g.pre.x || gemv_half_runs_pre_norm(g), kInternal,
           "[cuda] fused_linear: a joined norm before a product that cannot run it");
  IP_CHECK(g.rot_cols == 0 || (g.epilogue == GemvEpilogue::kNone && g.rot_d > 0 &&
                               g.rot_d % 8 == 0 && g.rot_cols % g.rot_d == 0 && g.rot_cols <= g.n),
           kInternal,
           "[cuda] fused_linear: a rotary epilogue over columns that are not whole heads");
  IP_CHECK(!g.norm_layer || (g.norm_w && !g.norm_w_float && !g.norm_one_plus), kInternal,
           "[cuda] fused_linear: a LayerNorm without its weight of the input's dtype");
  IP_CHECK(g.epilogue != GemvEpilogue::kGeluNew || g.rot_cols == 0, kInternal,
           "[cuda] fused_linear: a GELU epilogue after a rotary one");
  if (g.norm_layer || g.epilogue == GemvEpilogue::kGeluNew) return gemv_half_layer(g, stream);
  const cudaStream_t s = as_stream(stream);
  if (g.dtype == DType::kBFloat16)
    launch_epilogue<__nv_bfloat16>(g, s);
  else
    launch_epilogue<__half>(g, s);
  IP_CUDA_CHECK(cudaGetLastError(), "fused_linear");
}

}  // namespace inplace::cuda
