// The host-side interface of the CUDA kernels (plain C++, no CUDA types): operands as strided
// descriptors, one launcher per kernel family, each enqueued on the caller's stream. The .cu
// files implement them; the registration files (*_kernels.cpp) turn op arguments into them.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/scalar.h"
#include "core/tensor.h"

namespace inplace::cuda {

class Workspace;  // call_data.h

constexpr int kMaxDims = 8;

// The slots of a context's workspace (call_data.h) this backend's kernels use.
constexpr int kWorkspaceAttention = 0;  // the general attention path's split partials
constexpr int kWorkspaceBlas = 1;       // cuBLAS's workspace

// Whether kernels launch as programmatic dependents of the previous kernel (device_common.cuh):
// true unless the environment sets INPLACE_CUDA_PDL=0 (read once), which profiles use to time
// each kernel on its own (under PDL a kernel's span includes its wait for the one before).
bool pdl_enabled();

// Which kernel the one-row half GEMV takes (gemv_half.cu): by its weight bytes (kAuto), or always
// the task streams or the column blocks: INPLACE_CUDA_GEMV=stream or =columns, read once per
// process (tests that cover both, A/B profiles).
enum class GemvPath { kAuto, kStream, kColumns };
GemvPath gemv_half_path();

// Whether a norm step joins the launch of the product after it (launch_groups.h's prologues):
// INPLACE_CUDA_PROLOGUES=0 turns them off (each norm its own launch), read once per process.
bool prologues_enabled();

// A tensor viewed at a (broadcast) shape, or a Python number. Strides are in elements.
struct Operand {
  char* data = nullptr;
  int ndim = 0;
  int64_t size[kMaxDims] = {};
  int64_t stride[kMaxDims] = {};
  DType dtype = DType::kFloat32;
  bool is_number = false;
  bool number_is_float = false;
  double f = 0;
  int64_t i = 0;
};

// `t` broadcast to `shape` (stride 0 where it is broadcast); errors past kMaxDims dims.
Operand operand(const Tensor& t, const Shape& shape);
Operand operand(const Tensor& t);
Operand number(Scalar s);
int64_t numel(const Operand& o);

// Elementwise (elementwise.cu). Inputs are converted to the compute type of `out` (float for
// 16-bit and 32-bit floats, double for float64, int64 for integers and bool), as on the cpu.
void copy_cast(const Operand& out, const Operand& src, void* stream);
// Copies k (outs[k] from srcs[k], each as copy_cast computes it) in one launch where they convert
// through one compute type, else one launch each (cat's inputs into their slices of out).
constexpr int kMaxCopyBatch = 16;
void copy_cast_batch(const Operand* outs, const Operand* srcs, int n, void* stream);
void fill(const Operand& out, Scalar value, void* stream);
void binary(int op, const Operand& out, const Operand& a, const Operand& b, Scalar alpha,
            void* stream);  // op: BinaryOp
// Independent binary ops of one result dtype in one launch (a launch group's batch): task k
// computes exactly what binary(op, out, a, b, alpha) computes. `alpha` as binary() converts it
// for the result's compute type (alpha_f for floats, alpha_i for integers and bool).
constexpr int kMaxBinaryBatch = 16;
struct BinaryTask {
  Operand out, a, b;
  int op = 0;
  double alpha_f = 1;
  int64_t alpha_i = 1;
};
void binary_batch(const BinaryTask* tasks, int n, void* stream);
void unary(int op, const Operand& out, const Operand& in, void* stream);  // op: UnaryOp
void compare(int op, const Operand& out, const Operand& a, const Operand& b, DType compute,
             void* stream);  // op: CompareOp (ops/elementwise_codes.h numbers them all)
void where(const Operand& out, const Operand& cond, const Operand& a, const Operand& b,
           void* stream);

// Row operations (reduction.cu): a tensor seen as rows x cols, where `rows` indexes the kept
// dims and `cols` the reduced (or normalized) ones, both over the same memory.
struct RowView {
  Operand rows, cols;
};
enum class RowOp : uint8_t {
  kSum,
  kMean,
  kMax,
  kMin,
  kSoftmax,     // out: rows x cols
  kLogSoftmax,  // out: rows x cols
  kRmsNorm,     // out: rows x cols; weight over cols (optional)
  kLayerNorm,   // out: rows x cols; weight, bias over cols (optional)
  kArgMax,      // out: int64 rows; the first index of the extreme (NaN counts as largest)
  kArgMin,
};
struct RowTask {
  RowOp op = RowOp::kSum;
  RowView in, out;  // out.cols has ndim 0 for the reductions
  Operand weight, bias;
  bool has_weight = false, has_bias = false;
  double eps = 0;
  DType compute = DType::kFloat32;  // accumulate in float, double or int64 (compute_kind)
};
void row_op(const RowTask& task, void* stream);
// upcast_rms_norm (upcast_rms_norm.cu): Hugging Face's RMSNorm at a half dtype over `in.cols` (the
// last dim), rows x cols in and out, its weight over cols (the input's dtype, or float32 with
// weight_in_float), eps in task.eps; bitwise the cpu kernel.
// A nonzero weight_offset o: the weight (of the input's dtype or float32) is w.to(float32) + o in
// float32 (Gemma's 1 + w), applied as weight_in_float's. With a residual r (rows x cols as in):
// r + that, each element float(r) + float(y) rounded to the dtype, as add at the dtype does.
struct NormRotaryStep;
void upcast_rms_norm(const NormRotaryStep& step, void* stream);
// rms_norm_rotary: that row, then rotary_embedding over it (rotary.cu's rounding points); cos
// and sin as rows x cols at the result's shape (broadcast), of the input's dtype; rows of at most
// 1024 elements. One or two steps (a layer's q and k) in one launch.
struct NormRotaryStep {
  RowTask task;
  RowView cos, sin;
  bool weight_in_float = false;
  float weight_offset = 0;  // with weight_in_float: w.to(float32) + weight_offset
  RowView residual;         // upcast_rms_norm's residual, where rows.data is set
  Operand weight2;  // heads (a row's index modulo `heads`) from `split` on, where data is set
  int64_t split = 0, heads = 1;
};
void rms_norm_rotary(const NormRotaryStep* steps, int n, void* stream);

// Index kernels (index.cu), over the elements of `values` (the read's result, or the write's
// source). The position p of element i is index(i) (+ its coordinate along `coord_dim` when
// coord_dim >= 0, kv_cache_update's start form); `index` is read from device memory, never by
// the host. The other operand's element is at offset_of(strided, i) + p * unit, where
// `strided` has stride 0 along the indexed dim. Positions outside [0, extent) are not read (0
// is written) or not written.
struct IndexMap {
  Operand values;   // dst of a read, src of a write
  Operand strided;  // the indexed tensor at values' shape, stride 0 where the index applies
  Operand index;    // at values' shape (broadcast), an integer dtype
  int64_t unit = 0;
  int64_t extent = 0;
  int coord_dim = -1;
  bool wrap_negative = false;  // p < 0 means p + extent (index_put)
  // When set: a position outside [0, extent) also raises this device error flag (int32[4],
  // device_runtime.h) naming `error_step`, reported by the context after the call.
  int32_t* error = nullptr;
  int32_t error_step = -1;
};
void index_read(const IndexMap& m, void* stream);   // values[i] = strided[i, p]
void index_write(const IndexMap& m, void* stream);  // strided[i, p] = values[i]
void index_read_pair(const IndexMap& a, const IndexMap& b, void* stream);  // in one launch
// index_write(a) and index_write(b) in one launch (float32 rows four elements a thread, other
// dtypes one).
void index_write_pair(const IndexMap& a, const IndexMap& b, void* stream);

// Matrix products through cuBLAS (matrix_kernels.cpp): out[..., m, n] = alpha * a @ b +
// beta * out, batch dims of a and b broadcast to out's. cuBLAS's workspace is the workspace's
// kWorkspaceBlas slot (a context's own), or the calling thread's when `workspace` is null.
void matmul(const Tensor& a, const Tensor& b, const Tensor& out, Scalar alpha, Scalar beta,
            void* stream, Workspace* workspace = nullptr);

// rotary_embedding (rotary.cu): out = x * cos + rotate_half(x) * sin over out's last dim;
// x, cos and sin float32, broadcast to out's shape.
void rotary(const Operand& out, const Operand& x, const Operand& cos, const Operand& sin,
            void* stream);

// fused_linear and gated_mlp with a bfloat16 weight (fused_linear.cu): per row m of x and output n,
// v = sum_k x[m, k] * w[n, k] (+ bias[n]) accumulated in float32, then
//   kNone:     y[m, n] = v
//   kResidual: y[m, n] = v + residual[m, n]                (fused_linear's residual)
//   kSwiGLU:   y[m, n] = act(v) * sum_k x[m, k] * w2[n, k] (gated_mlp; no bias; act: silu or
//              gelu_tanh, the struct's `activation`)
// x float32 rows of stride x_stride (unit stride along k), w and w2 bfloat16 [n, k] contiguous
// (w's rows may lie in several weights: GemvMoreWeights),
// residual and y float32 rows of their strides. With norm_w (rms_norm_linear, rms_norm_gated_mlp:
// the fuse_norm_prologues pass) each row of x is RMS-normalised, x[m, k] * rsqrt(mean_k(x[m, k]^2)
// + eps) * norm_w[k] (norm_w float32 [k], contiguous); on the one-row path the rsqrt scales the
// finished sum (sum_k x[k] * norm_w[k] * w[n, k]) * rsqrt(...), equal up to rounding.
//   kGeluNew:  y[m, n] = gelu_new(v [+ residual])          (gemv_half only: fused_linear's
//              epilogue program when it is GPT-2's NewGELU, pointwise::match_gelu_new)
enum class GemvEpilogue : uint8_t { kNone, kResidual, kSwiGLU, kGeluNew };
// kSwiGLU's activation of the gate (gate_act.cuh): silu, or gelu(approximate='tanh') (GeGLU).
enum class GateActivation : uint8_t { kSilu, kGeluTanh };

// A row write from a one-row GEMV's epilogue: result column col0 + h * d + j (h < cols / d) also
// goes to dst[h * dst_stride + p * unit + j] (elements of the product's result dtype: float32
// for gemv_bf16, T for gemv_half), p the position at index[h * index_stride] (device memory, an
// integer dtype) or `number` when index is null, plus extent when negative and wrap_negative.
// Outside [0, extent) nothing is written and `error` (when set) is raised naming error_step, as
// index_write does.
struct GemvRowWrite {
  void* dst = nullptr;
  int64_t col0 = 0, cols = 0, d = 1, dst_stride = 0, unit = 0, extent = 0;
  const char* index = nullptr;
  DType index_dtype = DType::kInt64;
  int64_t index_stride = 0, number = 0;
  bool wrap_negative = false;
  int32_t* error = nullptr;
  int32_t error_step = -1;
};
// rms_norm_rotary's one step whose result (contiguous rows of d) is also stored by up to two row
// writes (a layer's k heads into the k cache: the kv_cache_update after it, in its launch).
void rms_norm_rotary_writes(const NormRotaryStep& step, const GemvRowWrite* writes, int n_writes,
                            void* stream);

// Input rows one pass of the GEMV serves over a weight row (gemv_device.cuh's gemv::kRows).
inline constexpr int kGemvRows = 4;

// A grouped product's further weights (fused_linear's more_weights), after the GEMV's own `w`:
// result column n reads row n - first[i] of w[i] for the last i < count with first[i] <= n, and
// row n of `w` below first[0]. Every weight of w's dtype, k and layout ([rows, k] contiguous).
// With bias[i] set (more_biases: a bias per weight) such a column adds element n - first[i] of
// bias[i] instead of element n of the GEMV's own bias (then `w`'s alone).
inline constexpr int kGemvMaxMoreWeights = 3;
struct GemvMoreWeights {
  const void* w[kGemvMaxMoreWeights] = {};
  const void* bias[kGemvMaxMoreWeights] = {};
  int64_t first[kGemvMaxMoreWeights] = {};
  int count = 0;
};
// Whether `w` and every further weight start 16-byte aligned (with k % 8 == 0 so does each row:
// the GEMVs' 16-byte loads).
inline bool weights_aligned16(const void* w, const GemvMoreWeights& more) {
  bool aligned = reinterpret_cast<uintptr_t>(w) % 16 == 0;
  for (int i = 0; i < more.count; ++i) aligned &= reinterpret_cast<uintptr_t>(more.w[i]) % 16 == 0;
  return aligned;
}

struct GemvBf16 {
  const float* x = nullptr;
  int64_t x_stride = 0, rows = 0;
  const void* w = nullptr;
  GemvMoreWeights more;  // kNone and kResidual only
  const void* w2 = nullptr;
  int64_t k = 0, n = 0;
  const float* bias = nullptr;
  const float* residual = nullptr;
  int64_t residual_stride = 0;
  float* y = nullptr;
  int64_t y_stride = 0;
  GemvEpilogue epilogue = GemvEpilogue::kNone;
  GateActivation activation = GateActivation::kSilu;  // kSwiGLU's
  const float* norm_w = nullptr;
  float eps = 0.f;
  // kNone with rot_cols > 0 (rms_norm_linear's rotary: fuse_rotary_epilogues):
  // each rot_d-wide block of columns [0, rot_cols) is rotated after the product,
  // y = v * cos[j] + rotate_half(v) * sin[j] (cos, sin float32 [rot_d]); rot_d % 8 == 0.
  const float* cos = nullptr;
  const float* sin = nullptr;
  int64_t rot_cols = 0, rot_d = 0;
  // kNone, one row (the engine's epilogue writes: a q/k/v product's k and v kv_cache_update):
  // after the epilogue each result column is also written where these place it.
  GemvRowWrite writes[2];
  int n_writes = 0;
  // Warps a column on the one-row path (1, 2, 4 or 8): set by gemv_bf16 from k.
  int32_t split = 1;
};
void gemv_bf16(const GemvBf16& g, void* stream);
// Whether gemv_bf16 does g's row writes: one row on the 16-byte path (k % 8 == 0, x rows and
// every pointer 16-byte aligned); the engine runs the writes as their own steps otherwise.
bool gemv_bf16_runs_writes(const GemvBf16& g);

// Creation (creation.cu): out[i] = start + i * step.
void arange(const Operand& out, double start, double step, void* stream);

// Attention (attention.cu): q [B, H, L, E], k [B, Hk, S, E], v [B, Hk, S, Ev] (Hk divides H;
// query head h reads kv head h / (H / Hk)), out [B, H, L, Ev]; mask (optional) broadcast to
// [B, H, L, S], bool (true keeps) or float (added); causal keeps key j <= query i. One pass
// over the S keys actually present (the filled prefix of a cache), with an online softmax;
// long sequences are split across blocks and merged.
struct Attention {
  Operand q, k, v, out, mask;
  bool has_mask = false, causal = false;
  double scale = 1.0;
  // When set: the key count, read on the device (a slice end with Python semantics, clamped to
  // k's dim 2, which is then the bound the keys were planned at).
  const int64_t* kv_len = nullptr;
  // When > 0: only the last `window` of the keys present are attended, [max(0, S - window), S)
  // (scaled_dot_product_attention's window: a sliding window over the filled prefix).
  int64_t window = 0;
  // The general path's split partials: attention_workspace_bytes(a) of device memory that no
  // kernel running at the same time uses (a context's workspace); null: a scratch of the
  // calling host thread, for kernels called outside a context.
  float* scratch = nullptr;
};
void attention(const Attention& a, void* stream);
// Bytes of scratch attention(a) uses (0: none; the same for every form that uses any).
size_t attention_workspace_bytes(const Attention& a);

}  // namespace inplace::cuda
