// The decode GEMV at a half activation dtype (a model exported in bf16 or fp16): x, the weights,
// bias, residual and y all of one dtype T (bfloat16 or float16). Each result is computed by the
// float operations of the chain the fused op replaces, rounding to T where the chain rounds:
//   the product sum_k x[k] * w[n, k] accumulated in float32 (+ bias), rounded to T;
//   kResidual: T(float(y) + float(residual));
//   kSwiGLU: g and u rounded to T, s = T(act(g)) (silu or gelu_tanh: gate_act.cuh),
//   y = T(s * u);
//   with norm_w, each input row first becomes upcast_rms_norm(x, norm_w, eps, norm_w_float):
//   inv = 1 / sqrt(float(mean_k(float(x)^2)) + eps) (the squares summed in double, as the cpu's
//   mean), h = float(x) * inv, then T(float(norm_w) * float(T(h))), or T(h * norm_w) with a
//   float32 norm_w (Gemma's 1 + w), or with norm_one_plus T(h * (1.f + float(norm_w))) (Gemma's
//   own weight, of T or float32: the chain's add of 1 done here);
//   with norm_layer, each input row first becomes layer_norm(x, [k], norm_w, norm_b, eps): its
//   mean and variance in float where the block normalises the row once (the one-row kernels up
//   to k 2048 and the stream kernel: two passes, the mean, then the squared deviations, in a
//   fixed order), else in double by each warp (layer_norm_device.cuh's two passes over the
//   row), then T(((x - mean) * rstd) * w + b) in float, each op rounded on its own (the cpu's
//   kernel computes all of it in double: equal up to the rounding of the T), norm_w and norm_b
//   of T;
//   kGeluNew: the value so far (bias added, rounded) runs GPT-2's gelu_new as the one-dtype
//   interpreter does (gelu_new_device.cuh), each op rounded to T;
//   kNone with rot_cols > 0 (rms_norm_linear's rotary epilogue: fuse_rotary_epilogues): each
//   rot_d-wide block of columns [0, rot_cols) of the rounded result is rotated as the standalone
//   rotary_embedding step at T: a = T(v * cos[j]), b = T(rotate_half(v) * sin[j]), y = T(a + b)
//   (cos, sin T [rot_d], rot_d % 8 == 0; products and sum unfused, as rotary.cu);
//   kNone, one row, with writes (the engine's epilogue writes: a q/k/v product's k and v
//   kv_cache_update): each finished T value of a written column also goes where GemvRowWrite
//   places it (dst of T), with the cache write's position checks and error flag.
//   with pre.x (a norm step joined before the product: launch_groups.h's prologues), the input
//   row is first residual + upcast_rms_norm(pre.x) as upcast_rms_norm.cu computes it, which
//   every block computes into its staged row and block 0 also stores into x (the norm step's
//   result, for the steps after): only the kernels that stage the row once a block
//   (gemv_half_runs_pre_norm).
// The sum's order is the GPU's (lanes, then a warp reduction): results match the cpu's up to
// the rounding of the float32 sum, which may move a T result by one unit in the last place.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/cuda/launch.h"
#include "ops/pointwise_forms.h"

namespace inplace::cuda {

// Rows of x a norm form normalises into shared memory: k at most this.
inline constexpr int64_t kGemvHalfMaxNormK = 16384;

// The norm step joined before a product (Gemma's norm after attention or after the MLP, whose
// result is the next product's input row): residual + upcast_rms_norm(x, w, eps, in_float,
// offset) at the product's dtype T.
struct GemvPreNorm {
  const void* x = nullptr;         // T [k]; null: no joined norm
  const void* w = nullptr;         // T [k], or float32 [k] (w_float)
  const void* residual = nullptr;  // T [k], or null
  bool w_float = false;
  bool in_float = false;  // the weight applied in float: weight_in_float (or an offset)
  float offset = 0.f;     // weight_offset: the weight is float(w) + offset
  float eps = 0.f;
};

struct GemvHalf {
  DType dtype = DType::kBFloat16;  // T: kBFloat16 or kFloat16
  const void* x = nullptr;
  int64_t x_stride = 0, rows = 0;
  const void* w = nullptr;
  GemvMoreWeights more;      // a grouped product's further weights (launch.h); not with kSwiGLU
  const void* w2 = nullptr;  // kSwiGLU's up weight
  int64_t k = 0, n = 0;
  const void* bias = nullptr;
  const void* residual = nullptr;
  int64_t residual_stride = 0;
  void* y = nullptr;
  int64_t y_stride = 0;
  GemvEpilogue epilogue = GemvEpilogue::kNone;
  GateActivation activation = GateActivation::kSilu;  // kSwiGLU's
  const void* norm_w = nullptr;                       // T [k], or float32 [k] with norm_w_float
  bool norm_w_float = false;
  bool norm_one_plus = false;  // the norm's weight is 1 + norm_w, its product in float
  float eps = 0.f;
  // The rotary epilogue (kNone): cos and sin T [rot_d]; 0 rot_cols: none.
  const void* cos = nullptr;
  const void* sin = nullptr;
  int64_t rot_cols = 0, rot_d = 0;
  // The row writes (kNone, one row).
  GemvRowWrite writes[2];
  int n_writes = 0;
  // The one-row path's geometry (set by gemv_half): warps a task, tasks (those of the rotated
  // prefix first), task groups (a block's tasks at a time), rounds a task, elements a round.
  int32_t split = 1;
  uint32_t tasks = 0, rot_tasks = 0, groups = 0, rounds = 0, round_k = 0;
  // The LayerNorm form: norm_w (and norm_b, T [k], or null) are a LayerNorm's, eps layer_eps.
  // (Last, as kGeluNew's numbers: the other forms' kernels read their fields where they were.)
  bool norm_layer = false;
  const void* norm_b = nullptr;
  double layer_eps = 0;
  pointwise::GeluNew gelu;  // kGeluNew's numbers
  GemvPreNorm pre;          // a joined norm step before the product
};

void gemv_half(const GemvHalf& g, void* stream);
// The products with a LayerNorm prologue or the kGeluNew epilogue (gemv_half_layer.cu, compiled
// with --fmad=false as the interpreter whose roundings the epilogue repeats); gemv_half passes
// them on.
void gemv_half_layer(const GemvHalf& g, void* stream);
// Whether gemv_half does g's row writes (kNone, one row); the engine runs them as their own steps
// otherwise.
bool gemv_half_runs_writes(const GemvHalf& g);
// Whether gemv_half runs g's joined norm step (g.pre): one row of an upcast-norm product whose
// kernel stages the row once a block, the norm's operands 16-byte aligned, no epilogue operand
// in x (which block 0 writes while the others compute).
bool gemv_half_runs_pre_norm(const GemvHalf& g);

}  // namespace inplace::cuda
