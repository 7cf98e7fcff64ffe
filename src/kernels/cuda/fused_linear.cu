// The decode GEMV with a bfloat16 weight (gemv_device.cuh), one launch a product.
#include "kernels/cuda/gemv_device.cuh"

namespace inplace::cuda {

namespace {

using gemv::kRows;
using gemv::kWarpsPerBlock;

template <GemvEpilogue kE, bool kVector, bool kNorm, int R>
__global__ void __launch_bounds__(32 * kWarpsPerBlock, R == 1 ? 4 : 2)
    gemv_bf16_kernel(GemvBf16 g) {
  pdl_trigger();
  gemv::gemv_block<kE, kVector, kNorm, R>(g, blockIdx.x, [] { pdl_wait(); });
}

template <GemvEpilogue kE>
void launch(const GemvBf16& g, bool vector, unsigned blocks, cudaStream_t s) {
  using Kernel = void (*)(GemvBf16);
  // [vector][norm][one row]; the scalar path (odd or unaligned rows) keeps four rows a pass.
  constexpr Kernel kKernels[2][2][2] = {
      {{gemv_bf16_kernel<kE, false, false, kRows>, gemv_bf16_kernel<kE, false, false, kRows>},
       {gemv_bf16_kernel<kE, false, true, kRows>, gemv_bf16_kernel<kE, false, true, kRows>}},
      {{gemv_bf16_kernel<kE, true, false, kRows>, gemv_bf16_kernel<kE, true, false, 1>},
       {gemv_bf16_kernel<kE, true, true, kRows>, gemv_bf16_kernel<kE, true, true, 1>}}};
  launch_pdl(kKernels[vector][g.norm_w != nullptr][g.rows == 1], blocks, 32 * kWarpsPerBlock, s, g);
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// The 16-byte path's conditions.
bool vector_form(const GemvBf16& g) {
  return g.k % 8 == 0 && g.x_stride % 4 == 0 && aligned16(g.x) && weights_aligned16(g.w, g.more) &&
         (g.epilogue != GemvEpilogue::kSwiGLU || aligned16(g.w2)) &&
         (!g.norm_w || aligned16(g.norm_w));
}

// Warps a column on the one-row path: enough that each lane fetches at most kUnroll 16-byte
// chunks of a weight row (all of it before the wait for the previous kernel), at most a block;
// one where the block's columns are rotated or written to a cache (those epilogues pair columns
// within a block).
int32_t column_split(const GemvBf16& g) {
  if (g.rot_cols > 0 || g.n_writes > 0) return 1;
  const int64_t chunks = g.k / 8;
  int32_t split = 1;
  while (split < kWarpsPerBlock && chunks > int64_t{32} * gemv::kUnroll * split) split *= 2;
  return split;
}

}  // namespace

bool gemv_bf16_runs_writes(const GemvBf16& g) {
  return g.epilogue == GemvEpilogue::kNone && g.rows == 1 && g.n > 0 && vector_form(g);
}

void gemv_bf16(const GemvBf16& given, void* stream) {
  if (given.rows == 0 || given.n == 0) return;
  GemvBf16 g = given;
  IP_CHECK(g.n_writes == 0 || gemv_bf16_runs_writes(g), kInternal,
           "[cuda] fused_linear: row writes from a product that cannot run them");
  IP_CHECK(g.more.count == 0 || g.epilogue != GemvEpilogue::kSwiGLU, kInternal,
           "[cuda] gated_mlp: a grouped product");
  const bool vector = vector_form(g);
  g.split = vector && g.rows == 1 ? column_split(g) : 1;
  const int64_t columns = kWarpsPerBlock / g.split;  // a block
  const unsigned blocks = static_cast<unsigned>((g.n + columns - 1) / columns);
  const cudaStream_t s = as_stream(stream);
  switch (g.epilogue) {
    case GemvEpilogue::kNone:
      launch<GemvEpilogue::kNone>(g, vector, blocks, s);
      break;
    case GemvEpilogue::kResidual:
      launch<GemvEpilogue::kResidual>(g, vector, blocks, s);
      break;
    case GemvEpilogue::kSwiGLU:
      launch<GemvEpilogue::kSwiGLU>(g, vector, blocks, s);
      break;
    case GemvEpilogue::kGeluNew:
      IP_CHECK(false, kInternal, "[cuda] fused_linear: a GELU epilogue on a float32 input");
  }
  IP_CUDA_CHECK(cudaGetLastError(), "fused_linear");
}

}  // namespace inplace::cuda
