// The cpu kernels of the fused linear family (fused_linear, gated_mlp and their RMSNorm-prologue
// forms rms_norm_linear, rms_norm_gated_mlp), registered into the kernel table. They cover a
// float32 input with a float32 or bfloat16 weight (the streaming GEMV's two weight types), and a
// bfloat16 or float16 input with a weight of its dtype (a model exported at that dtype).
// Arguments are read at the positions of ops/fused_linear_args.h, whose shape rules each kernel
// checks first. Exact: every result element is computed by the same float operations, in the
// same order, as the chain's kernels; a norm form runs the chain itself (the norm into a
// temporary, the product, then the rotation; a LayerNorm's too), and an epilogue program runs as
// the fused_pointwise kernel on the finished result. At a half dtype the product runs the chain's
// own kernels (chain.h: linear, add, silu or gelu, mul), each rounding its result to that dtype.
#include <algorithm>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/cpu/chain.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/matrix.h"
#include "kernels/cpu/registration.h"
#include "kernels/cpu/rotary.h"
#include "ops/fused_linear_args.h"

namespace inplace::cpu {

namespace {

using namespace fused_linear;

// Up to this many rows of x the GEMV in passes of kGemvMaxRows rows beats widening the weight
// to float32 and calling sgemm (small bf16, one thread, prompts of 32-256 tokens: 32 vs 55 ms,
// 147 vs 175 ms); it also needs no float32 copy of the weight.
constexpr int64_t kGemvPromptRows = 256;

bool is_half(DType d) {
  return d == DType::kBFloat16 || d == DType::kFloat16;
}

// The weight types the GEMV streams, or a half input with a weight of its dtype (the chain's
// kernels): "" when the kernels run `a`'s dtypes, else why not.
std::string supports(const Args& a) {
  const DType x = a[kInput].tensor.dtype(), w = a[kWeight].tensor.dtype();
  if (is_half(x) && w == x) return "";
  if (x != DType::kFloat32 || (w != DType::kFloat32 && w != DType::kBFloat16))
    return "an input that is not float32 or a weight that is not float32 or bfloat16 (or a "
           "bfloat16 / float16 input and weight)";
  return "";
}

const ChainOp kLinearOp("linear"), kAddOp("add.Tensor"), kSiluOp("silu"), kMulOp("mul.Tensor");

// The gated MLP's activation of `gate`, as its own op's kernel computes it (gelu's kernel is
// unary(kGeluTanh) for approximate='tanh').
Tensor activation(const Args& a, const Tensor& gate) {
  if (activation_of(a) == kSilu) return kSiluOp({Value::from_tensor(gate)});
  Tensor out = Tensor::empty(gate.shape(), gate.dtype());
  unary(UnaryOp::kGeluTanh, out, gate);
  return out;
}

// fused_linear at a half dtype: linear (its result rounded), then the residual's add (rounded).
void run_half_linear(const Args& a, const std::vector<Tensor>& out) {
  kLinearOp.into({a[kInput], a[kWeight], a[kBias]}, out[0]);
  if (has_arg(a, kResidual)) kAddOp.into({a[kResidual], Value::from_tensor(out[0])}, out[0]);
}

// gated_mlp at a half dtype: act(x @ wg^T) * (x @ wu^T), each step rounded as the chain's.
void run_half_gated_mlp(const Args& a, const std::vector<Tensor>& out) {
  const Tensor gate = kLinearOp({a[kInput], a[kWeight], Value::none()});
  const Tensor up = kLinearOp({a[kInput], a[kUpWeight], Value::none()});
  kMulOp.into({Value::from_tensor(activation(a, gate)), Value::from_tensor(up)}, out[0]);
}

void check_supported(const char* op, const Args& a) {
  const std::string why = supports(a);
  IP_CHECK(why.empty(), kUnsupported, "[", op, "] on the cpu: ", why);
}

template <typename W>
void linear_product(const Args& a, const Tensor& y) {
  const Tensor& x = a[kInput].tensor;
  const Tensor& w = a[kWeight].tensor;
  const int64_t k = w.size(1), n = w.size(0), rows = x.numel() / std::max<int64_t>(k, 1);
  if (rows <= kGemvPromptRows && x.is_contiguous() && w.is_contiguous() && y.is_contiguous()) {
    // Decode, and prompts of up to kGemvPromptRows tokens: the GEMV, kGemvMaxRows rows of x per
    // pass over the weight.
    for (int64_t r0 = 0; r0 < rows; r0 += kGemvMaxRows)
      gemv_parallel(GemvArgs<W>{x.data<float>() + r0 * k, k, std::min(kGemvMaxRows, rows - r0),
                                w.data<W>(), k, n, k, y.data<float>() + r0 * n, n, 1.0f, 0.0f});
  } else {  // a long prompt: widen the weight once per call and multiply
    matmul(x.reshape({rows, k}), w.to(DType::kFloat32).t(), y.view({rows, n}));
  }
}

// fused_linear without a residual.
void run_linear(const Args& a, const std::vector<Tensor>& out) {
  linear_meta(a);
  check_supported(kLinear, a);
  if (is_half(a[kInput].tensor.dtype())) return run_half_linear(a, out);
  const Tensor& x = a[kInput].tensor;
  const Tensor& w = a[kWeight].tensor;
  const Tensor& y = out[0];
  const int64_t k = w.size(1), n = w.size(0), rows = x.numel() / std::max<int64_t>(k, 1);
  if (w.dtype() == DType::kBFloat16)
    linear_product<BFloat16>(a, y);
  else
    linear_product<float>(a, y);
  if (!a[kBias].is_none()) {
    const float* b = a[kBias].tensor.contiguous().data<float>();
    float* yp = y.data<float>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j) yp[r * n + j] += b[j];
  }
}

// y[rows, n] = x[rows, k] @ w^T (+ beta * y) for contiguous operands: the streaming gemv for a
// few rows, the widened-weight matmul for a prompt.
template <typename W>
void product(const Tensor& x, const Tensor& w, float* y, int64_t rows, float beta) {
  const int64_t k = w.size(1), n = w.size(0);
  const Tensor xc = x.contiguous(), wc = w.contiguous();
  for (int64_t r0 = 0; r0 < rows; r0 += kGemvMaxRows) {
    const int64_t m = std::min(kGemvMaxRows, rows - r0);
    gemv_parallel(GemvArgs<W>{xc.data<float>() + r0 * k, k, m, wc.data<W>(), k, n, k, y + r0 * n, n,
                              1.0f, beta});
  }
}

void product(const Tensor& x, const Tensor& w, float* y, int64_t rows, float beta) {
  if (w.dtype() == DType::kBFloat16)
    product<BFloat16>(x, w, y, rows, beta);
  else
    product<float>(x, w, y, rows, beta);
}

// fused_linear with a residual.
void run_add(const Args& a, const std::vector<Tensor>& out) {
  linear_meta(a);
  check_supported(kLinear, a);
  const Tensor& x = a[kInput].tensor;
  const Tensor& w = a[kWeight].tensor;
  const Tensor& y = out[0];
  const int64_t n = w.size(0), rows = y.numel() / std::max<int64_t>(n, 1);
  IP_CHECK(y.is_contiguous(), kUnsupported, "[", kLinear, "] a result that is not contiguous");
  if (y.numel() == 0) return;
  float* yp = y.data<float>();
  if (a[kBias].is_none()) {
    // y = residual, then y = x @ w^T + y: the dot product's sum, then one add, as the chain.
    y.copy_from(a[kResidual].tensor);
    product(x, w, yp, rows, 1.0f);
    return;
  }
  // With a bias the chain rounds (dot + bias) before adding the residual: do the same.
  product(x, w, yp, rows, 0.0f);
  const Tensor b = a[kBias].tensor.contiguous(), r = a[kResidual].tensor.contiguous();
  const float* bp = b.data<float>();
  const float* rp = r.data<float>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) yp[i * n + j] = (yp[i * n + j] + bp[j]) + rp[i * n + j];
}

// Columns are done in tiles of kTile: the gate's and the up's products of a tile in two small
// buffers on the stack, then act(g) * u into the result, so no step allocates.
constexpr int64_t kTile = 64;

template <typename W>
void gated_mlp_product(const Args& a, const Tensor& y) {
  const bool silu = activation_of(a) == kSilu;
  const Tensor x = a[kInput].tensor.contiguous();
  const Tensor wg = a[kWeight].tensor.contiguous(), wu = a[kUpWeight].tensor.contiguous();
  const int64_t k = wg.size(1), n = wg.size(0), rows = y.numel() / std::max<int64_t>(n, 1);
  if (y.numel() == 0) return;
  float* yp = y.data<float>();
  const float* xp = x.data<float>();
  const int64_t tiles = (n + kTile - 1) / kTile;
  auto tile = [&](int64_t t) {
    const int64_t j0 = t * kTile, cols = std::min(kTile, n - j0);
    for (int64_t r0 = 0; r0 < rows; r0 += kGemvMaxRows) {
      const int64_t m = std::min(kGemvMaxRows, rows - r0);
      float g[kGemvMaxRows * kTile], u[kGemvMaxRows * kTile];
      gemv(GemvArgs<W>{xp + r0 * k, k, m, wg.data<W>() + j0 * k, k, cols, k, g, kTile, 1.0f, 0.0f},
           0, cols);
      gemv(GemvArgs<W>{xp + r0 * k, k, m, wu.data<W>() + j0 * k, k, cols, k, u, kTile, 1.0f, 0.0f},
           0, cols);
      for (int64_t i = 0; i < m; ++i) {
        float* gi = g + i * kTile;
        if (silu)  // the activation's own kernel: the same values as the chain's
          silu_f32(gi, gi, cols);
        else
          unary(UnaryOp::kGeluTanh, Tensor::borrow(gi, {cols}, DType::kFloat32),
                Tensor::borrow(gi, {cols}, DType::kFloat32));
        for (int64_t j = 0; j < cols; ++j) yp[(r0 + i) * n + j0 + j] = gi[j] * u[i * kTile + j];
      }
    }
  };
  ThreadPool* pool = current_thread_pool();
  if (pool == nullptr || pool->threads() < 2 || tiles < 2) {
    for (int64_t t = 0; t < tiles; ++t) tile(t);
  } else {
    pool->parallel_for(tiles, tile);
  }
}

void run_gated_mlp(const Args& a, const std::vector<Tensor>& out) {
  gated_mlp_meta(a);
  check_supported(kGatedMlp, a);
  if (is_half(a[kInput].tensor.dtype())) return run_half_gated_mlp(a, out);
  const Tensor& y = out[0];
  IP_CHECK(y.is_contiguous(), kUnsupported, "[", kGatedMlp, "] a result that is not contiguous");
  if (a[kWeight].tensor.dtype() == DType::kBFloat16)
    gated_mlp_product<BFloat16>(a, y);
  else
    gated_mlp_product<float>(a, y);
}

// y[.., :cols] as rows of d-wide blocks, each rotated as rotary_embedding does at y's dtype (from
// a copy of the block: the kernel reads both halves of what it writes). At a half dtype y holds
// the product rounded to it, and the rotary rounds each product and the sum: the chain's values.
void rotate_prefix(const Tensor& y, const Tensor& cos, const Tensor& sin, int64_t cols) {
  const int64_t n = y.size(-1), d = cos.size(-1), rows = y.numel() / n;
  const DType dt = y.dtype();
  const size_t item = dtype_size(dt);
  const Tensor c = cos.reshape({d}), s = sin.reshape({d});
  Tensor block = Tensor::empty({d}, dt);
  char* yp = static_cast<char*>(y.data_ptr());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j0 = 0; j0 < cols; j0 += d) {
      char* at = yp + (r * n + j0) * item;
      std::copy(at, at + d * item, static_cast<char*>(block.data_ptr()));
      rotary_embedding(block, c, s, Tensor::borrow(at, {d}, dt));
    }
}

const ChainOp kRmsNormOp("rms_norm"), kUpcastRmsNormOp("upcast_rms_norm"),
    kLayerNormOp("layer_norm"), kPointwiseOp("fused_pointwise");

// The epilogue program at `pos` (when given) on the finished result, in place: the
// fused_pointwise kernel the unfused chain runs.
void run_epilogue(const Args& a, size_t pos, const Tensor& y) {
  if (has_items(a, pos)) kPointwiseOp.into({Value::list({Value::from_tensor(y)}), a[pos]}, y);
}

// Gemma's 1 + w.to(float32) (norm="upcast_one_plus_weight") as its chain: the cast, then the add
// of the number.
Value one_plus_weight(const Tensor& w) {
  Tensor up = Tensor::empty(w.shape(), DType::kFloat32);
  copy_cast(up, w);
  return Value::from_tensor(kAddOp({Value::from_tensor(up), Value::floating(1.0)}));
}

using Product = void (*)(const Args&, const std::vector<Tensor>&);

// The norm form as its chain: its norm (rms_norm, layer_norm or upcast_rms_norm, Gemma's
// weight's 1 + w first) into a temporary, the product, then the rotation or the epilogue program.
Kernel norm_form(const char* name, Product run_product) {
  return [name, run_product](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    const std::string norm = norm_of(name, a);
    const Value float_weight =
        norm == kNormUpcastOnePlusWeight ? one_plus_weight(a[kNormWeight].tensor) : Value::none();
    const ChainOp& norm_op = norm == kNormRms     ? kRmsNormOp
                             : norm == kNormLayer ? kLayerNormOp
                                                  : kUpcastRmsNormOp;
    const Tensor normed = norm_op(norm_op_args(name, a, float_weight));
    run_product(product_args(name, Value::from_tensor(normed), a), out);  // its more weights too
    Tensor cos, sin;
    int64_t cols = 0;
    if (rotary_of(a, out[0].size(-1), &cos, &sin, &cols)) {
      IP_CHECK(out[0].is_contiguous(), kUnsupported, "[", kNormLinear,
               "] a rotated result that is not contiguous");
      rotate_prefix(out[0], cos.contiguous(), sin.contiguous(), cols);
    }
    if (std::string(name) == kNormLinear) run_epilogue(a, kNormEpilogue, out[0]);
  };
}

// fused_linear of one weight: the residual epilogue's kernel when it has one.
void run_one_weight(const Args& a, const std::vector<Tensor>& out) {
  if (is_half(a[kInput].tensor.dtype()))
    run_linear(a, out);  // with its residual
  else if (has_arg(a, kResidual))
    run_add(a, out);
  else
    run_linear(a, out);
}

// Whether a float32 fused_linear without a residual runs the widened-weight matmul (whose
// blocking depends on the columns) rather than the GEMV: linear_product's choice.
bool runs_matmul(const Args& a, const std::vector<Tensor>& weights) {
  const Tensor& x = a[kInput].tensor;
  const int64_t k = weights[0].size(1);
  if (is_half(x.dtype()) || has_arg(a, kResidual) || k == 0) return false;
  bool contiguous = x.is_contiguous();
  for (const Tensor& w : weights) contiguous &= w.is_contiguous();
  return x.numel() / k > kGemvPromptRows || !contiguous;
}

// fused_linear: a grouped product (more_weights) as one product per weight into its block of
// the result's columns, with its bias (its block of bias, or its own of more_biases) and its
// block of the residual; each block's elements are those of the product with the weights
// stacked (the GEMV and the half kernels compute each column on its own), and of the separate
// products. A product the matmul takes (a long prompt) runs on the weights (and biases) stacked
// into a temporary, as that path widens its weight into one anyway.
void run_fused_linear(const Args& a, const std::vector<Tensor>& out) {
  if (!has_items(a, kMoreWeights)) return run_one_weight(a, out);
  linear_meta(a);
  const std::vector<Tensor> weights = product_weights(a);
  const Tensor& y = out[0];
  const int64_t k = weights[0].size(1);
  const std::vector<Value> biases = product_biases(a);
  if (runs_matmul(a, weights)) {
    Tensor stacked = Tensor::empty({y.size(-1), k}, weights[0].dtype());
    Value bias = a[kBias];
    if (has_items(a, kMoreBiases))
      bias = Value::from_tensor(Tensor::empty({y.size(-1)}, a[kBias].tensor.dtype()));
    int64_t at = 0;
    for (size_t i = 0; i < weights.size(); ++i) {
      const int64_t n = weights[i].size(0);
      stacked.slice(0, at, at + n).copy_from(weights[i]);
      if (has_items(a, kMoreBiases)) bias.tensor.slice(0, at, at + n).copy_from(biases[i].tensor);
      at += n;
    }
    return run_one_weight({a[kInput], Value::from_tensor(stacked), bias, a[kResidual]}, out);
  }
  int64_t at = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const Tensor& w = weights[i];
    const int64_t n = w.size(0);
    auto block = [&](const Value& v) {
      return v.is_none() ? v : Value::from_tensor(v.tensor.slice(-1, at, at + n));
    };
    const Tensor part = y.slice(-1, at, at + n);
    const Args one{a[kInput], Value::from_tensor(w), biases[i], block(a[kResidual])};
    if (part.is_contiguous()) {  // one row: the block lies in place
      run_one_weight(one, {part});
    } else {
      const Tensor t = Tensor::empty(part.shape(), y.dtype());
      run_one_weight(one, {t});
      part.copy_from(t);
    }
    at += n;
  }
}

// fused_linear with its epilogue program.
void run_fused_linear_op(const Args& a, const std::vector<Tensor>& out) {
  run_fused_linear(a, out);
  run_epilogue(a, kLinearEpilogue, out[0]);
}

Kernel kernel(Product run) {
  return
      [run](const Args& a, const std::vector<Tensor>& out, const KernelContext&) { run(a, out); };
}

// A norm form's dtypes are its product's (a rotary's cos and sin are of the input's: its shape
// rule).
std::string supports_norm_form(const char* name, const Args& a) {
  return supports(product_args(name, a[kInput], a));
}

}  // namespace

void register_fused_linear_kernels(KernelTable& table) {
  const DeviceType c = DeviceType::kCpu;
  table.add(c, kLinear, kernel(run_fused_linear_op), supports);
  table.add(c, kGatedMlp, kernel(run_gated_mlp), supports);
  table.add(c, kNormLinear, norm_form(kNormLinear, run_fused_linear),
            [](const Args& a) { return supports_norm_form(kNormLinear, a); });
  table.add(c, kNormGatedMlp, norm_form(kNormGatedMlp, run_gated_mlp),
            [](const Args& a) { return supports_norm_form(kNormGatedMlp, a); });
}

}  // namespace inplace::cpu
