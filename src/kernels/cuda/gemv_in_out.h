// The decode GEMV over a weight stored [in, out] (fused_addmm: GPT-2's Conv1D, addmm's mat2),
// read where it lies: threads read runs of consecutive columns of W's rows (coalesced; at one
// row whole 128-byte lines, k split across the blocks of a thread-block cluster), and the
// partial sums meet in shared memory (the cluster's distributed shared memory) in a fixed order:
// the same bits on every call. Every operand is of one dtype T (float32, bfloat16 or float16);
// each result is computed by the float operations of the chain the fused op replaces, rounding
// to T where the chain rounds:
//   with norm, each input row first becomes layer_norm(x, [k], norm_w, norm_b, eps) as the cpu
//   kernel computes it: mean and variance in double, then T(float(((x - mean) * rstd) * w + b))
//   in double (no fused multiply-add);
//   the product sum_k x[k] * w[k, n] accumulated in float32, plus bias, rounded to T;
//   with a residual: T(float(y) + float(residual));
//   with an epilogue program (fused_addmm's `epilogue`: a fused_pointwise program over the one
//   input, GPT-2's GELU-tanh chain), the value so far runs it as the fused_pointwise kernel
//   does (pointwise_device.cuh), each register rounded as the unfused chain rounds.
// The sum's order is the GPU's (fixed for a shape and GPU): results match the cpu's up to the
// rounding of the float32 sum.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/cuda/launch.h"
#include "ops/pointwise_forms.h"
#include "ops/pointwise_program.h"

namespace inplace::cuda {

// A fused_pointwise program over one input (the product's value), its result of that dtype.
struct GemvEpilogueProgram {
  pointwise::Instr code[pointwise::kMaxInstructions];
  uint8_t reg[pointwise::kMaxInstructions] = {};  // each register's dtype
  int n_code = 0;                                 // 0: none
  bool one_dtype = false;   // every instruction of the product's dtype (set by gemv_in_out)
  bool activation = false;  // one_dtype, and activation ops only (set by gemv_in_out)
  // GPT-2's gelu_new (pointwise::match_gelu_new, set by gemv_in_out): run as straight-line code.
  bool gelu_new = false;
  pointwise::GeluNew gelu;
};

struct GemvInOut {
  DType dtype = DType::kBFloat16;  // T
  const void* x = nullptr;         // rows of k, x_stride apart, unit stride along k
  int64_t x_stride = 0, rows = 0;
  const void* w = nullptr;  // [k, n], contiguous
  int64_t k = 0, n = 0;
  const void* bias = nullptr;      // [n] or null
  const void* residual = nullptr;  // rows of n, residual_stride apart, or null
  int64_t residual_stride = 0;
  void* y = nullptr;  // rows of n, y_stride apart
  int64_t y_stride = 0;
  bool norm = false;             // the LayerNorm prologue
  const void* norm_w = nullptr;  // [k] or null
  const void* norm_b = nullptr;  // [k] or null
  double eps = 0;
  GemvEpilogueProgram epilogue;
  // One row: the engine's epilogue writes (a c_attn product's k and v kv_cache_update), each
  // finished value of a written column also stored where GemvRowWrite places it, with the cache
  // write's position checks and error flag.
  GemvRowWrite writes[2];
  int n_writes = 0;
};

void gemv_in_out(const GemvInOut& g, void* stream);

}  // namespace inplace::cuda
