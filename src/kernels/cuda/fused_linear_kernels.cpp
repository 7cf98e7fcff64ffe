// The CUDA kernels of the fused linear family: fused_linear(x, w, bias, residual) (the product
// reads the bf16 weight where it lies: the step the fuse_weight_casts pass makes of
// `linear(x, w.to(float32))`; its residual: fuse_linear_epilogues), gated_mlp (the SwiGLU or
// GeGLU epilogue), and the two with an RMSNorm prologue (rms_norm_linear, rms_norm_gated_mlp:
// fuse_norm_prologues), whose arguments are (x, norm_weight, eps, then the product's own). The
// GEMV covers a float32 input with a bfloat16 weight, and a bfloat16 or float16 input with a
// weight of its dtype (gemv_half.h: a model exported at that dtype, its norm upcast_rms_norm);
// supports() refuses other dtypes.
#include "kernels/cuda/gemv_half.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/launch_groups.h"
#include "kernels/cuda/registration.h"
#include "kernels/cuda/row_write.h"
#include "ops/fused_linear_args.h"
#include "ops/fused_pointwise_args.h"
#include "ops/kv_cache_args.h"
#include "ops/nn_args.h"
#include "ops/pointwise_forms.h"

namespace inplace::cuda {

namespace {

using namespace fused_linear;

// x as rows of unit stride along k, each row `stride` apart; false when it is not.
bool rows_of(const Tensor& x, int64_t k, int64_t* stride) {
  *stride = k;
  if (x.numel() == 0) return true;
  if (x.size(-1) > 1 && x.stride(-1) != 1) return false;
  // Leading dims must collapse into one stride.
  int64_t expect = -1;
  for (int64_t d = x.dim() - 2; d >= 0; --d) {
    if (x.size(d) == 1) continue;
    if (expect < 0) {
      *stride = x.stride(d);
      expect = x.stride(d) * x.size(d);
    } else if (x.stride(d) != expect) {
      return false;
    } else {
      expect *= x.size(d);
    }
  }
  return true;
}

bool is_half(DType d) {
  return d == DType::kBFloat16 || d == DType::kFloat16;
}

bool half_input(const Args& a) {
  return is_half(a[kInput].tensor.dtype());
}

static_assert(kGemvMaxMoreWeights + 1 == kMaxWeights, "a GEMV reads every weight of a product");

// The product's weights (weight, then more_weights) as the GEMV reads them: the further ones in
// `more` (pointers only when `data`), their rows in `n`, and their own biases where the product
// has them (more_biases, each contiguous and of bias's dtype); "" or why the kernel cannot read
// them.
std::string weights_of(const Args& a, GemvMoreWeights* more, int64_t* n, bool data) {
  const std::vector<Tensor> ws = product_weights(a);
  if (ws.size() > static_cast<size_t>(kMaxWeights))
    return str_cat("more than ", kMaxWeights, " weights in one product");
  if (has_items(a, kMoreBiases)) {
    if (a[kBias].is_none()) return "more biases without a bias";
    const std::vector<Value> bs = product_biases(a);
    for (size_t i = 1; i < bs.size() && i < ws.size(); ++i) {
      if (bs[i].is_none() || !bs[i].tensor.is_contiguous() ||
          bs[i].tensor.dtype() != a[kBias].tensor.dtype())
        return "more biases that are not contiguous or not of the bias's dtype";
      if (data && bs[i].tensor.numel() > 0) more->bias[i - 1] = bs[i].tensor.data_ptr();
    }
  }
  *n = 0;
  for (size_t i = 0; i < ws.size(); ++i) {
    const Tensor& w = ws[i];
    if (!w.is_contiguous()) return "a weight that is not contiguous";
    if (w.dtype() != ws[0].dtype() || w.dim() != 2 || w.size(1) != ws[0].size(1))
      return "more weights of another dtype or k than the weight's";
    if (i > 0) {
      more->first[i - 1] = *n;
      if (data && w.numel() > 0) more->w[i - 1] = w.data_ptr();
    }
    *n += w.size(0);
  }
  more->count = static_cast<int>(ws.size()) - 1;
  return "";
}

// The product's operands at a half dtype (every operand of the input's dtype): "" or why the
// kernel cannot run them; pointers only when `data`.
std::string half_operands(const Args& a, const Tensor& y, GemvHalf* g, bool data = true) {
  const Tensor& x = a[kInput].tensor;
  const Tensor& w = a[kWeight].tensor;
  if (w.dtype() != x.dtype()) return "a weight of another dtype than the half input's";
  int64_t n = 0;
  const std::string why = weights_of(a, &g->more, &n, data);
  if (!why.empty()) return why;
  int64_t stride = 0;
  if (!rows_of(x, w.size(1), &stride)) return "an input whose rows are not evenly strided";
  if (!y.is_contiguous()) return "a result that is not contiguous";
  const Value& bias = a[kBias];
  if (!bias.is_none() && (!bias.tensor.is_contiguous() || bias.tensor.dtype() != x.dtype()))
    return "a bias that is not contiguous";
  g->dtype = x.dtype();
  g->x_stride = stride;
  g->k = w.size(1);
  g->n = n;
  g->rows = g->k ? x.numel() / g->k : 0;
  g->y_stride = g->n;
  if (data && g->rows > 0 && g->n > 0) {
    g->x = x.data_ptr();
    g->w = w.data_ptr();
    g->y = y.data_ptr();
    if (!bias.is_none()) g->bias = bias.tensor.data_ptr();
  }
  return "";
}

// The epilogue program at `pos` of `a` (fused_linear's or rms_norm_linear's): "" when it has none
// or it is GPT-2's gelu_new at the half input's dtype (*gelu its numbers), else why the kernels
// cannot run it.
std::string epilogue_form(const Args& a, size_t pos, pointwise::GeluNew* gelu) {
  if (!has_items(a, pos)) return "";
  if (!half_input(a)) return "an epilogue program at float32";
  const DType t = a[kInput].tensor.dtype();
  const pointwise::Program p = pointwise::decode(a[pos].as_int_list(kLinear), {t});
  if (p.code.empty() || static_cast<DType>(p.code[0].dtype) != t ||
      !pointwise::match_gelu_new(p.code.data(), static_cast<int>(p.code.size()), gelu))
    return "an epilogue program other than GPT-2's gelu_new at the input's dtype";
  return "";
}

// Sets g's kGeluNew epilogue when `a` has the epilogue program at `pos` (epilogue_form's).
void add_epilogue(const Args& a, size_t pos, const char* op, GemvHalf* g) {
  if (!has_items(a, pos)) return;
  const std::string why = epilogue_form(a, pos, &g->gelu);
  IP_CHECK(why.empty(), kUnsupported, "[cuda] ", op, ": ", why);
  g->epilogue = GemvEpilogue::kGeluNew;
}

// fused_linear (its residual too) at a half dtype.
std::string supports_half_linear(const Args& a) {
  GemvHalf g;
  Shape out(a[kInput].tensor.shape().begin(), a[kInput].tensor.shape().end() - 1);
  out.push_back(product_rows(a));
  std::string why = half_operands(a, Tensor::meta(out, a[kInput].tensor.dtype()), &g, false);
  int64_t stride = 0;
  if (why.empty() && has_arg(a, kResidual) && !rows_of(a[kResidual].tensor, out.back(), &stride))
    why = "a residual whose rows are not evenly strided";
  return why;
}

std::string supports_half_gated_mlp(const Args& a) {
  const Tensor& up = a[kUpWeight].tensor;
  if (!up.is_contiguous() || up.dtype() != a[kInput].tensor.dtype())
    return "an up weight that is not contiguous or not of the input's dtype";
  return supports_half_linear({a[kInput], a[kWeight], Value::none(), Value::none()});
}

// The product's operands as a GemvBf16 (epilogue kNone; pointers only when `data`): "" or why
// the kernel cannot run them.
std::string operands(const Args& a, const Tensor& y, GemvBf16* g, bool data = true) {
  const Tensor& x = a[kInput].tensor;
  const Tensor& w = a[kWeight].tensor;
  int64_t stride = 0, n = 0;
  const std::string why = weights_of(a, &g->more, &n, data);
  if (!why.empty()) return why;
  if (!rows_of(x, w.size(1), &stride)) return "an input whose rows are not evenly strided";
  if (!y.is_contiguous()) return "a result that is not contiguous";
  g->x_stride = stride;
  g->k = w.size(1);
  g->n = n;
  g->rows = g->k ? x.numel() / g->k : 0;
  g->y_stride = g->n;
  if (data && g->rows > 0 && g->n > 0) {
    g->x = static_cast<const float*>(x.data_ptr());
    g->w = w.data_ptr();
    g->y = static_cast<float*>(y.data_ptr());
  }
  return "";
}

// The product's operands, checked before the result exists (a contiguous float32 result).
std::string supports_product(const Args& a) {
  if (a[kInput].tensor.dtype() != DType::kFloat32 || a[kWeight].tensor.dtype() != DType::kBFloat16)
    return "an input that is not float32 or a weight that is not bfloat16";
  GemvBf16 g;
  Shape out(a[kInput].tensor.shape().begin(), a[kInput].tensor.shape().end() - 1);
  out.push_back(product_rows(a));
  return operands(a, Tensor::meta(out, DType::kFloat32), &g, /*data=*/false);
}

// fused_linear without its residual.
std::string supports_linear(const Args& a) {
  if (has_arg(a, kResidual)) return "a residual";
  if (half_input(a)) return supports_half_linear(a);
  if (!a[kBias].is_none() && !a[kBias].tensor.is_contiguous())
    return "a bias that is not contiguous";
  return supports_product(a);
}

std::string supports(const Args& a) {
  pointwise::GeluNew gelu;
  const std::string epilogue = epilogue_form(a, kLinearEpilogue, &gelu);
  if (!epilogue.empty()) return epilogue;
  if (has_items(a, kLinearEpilogue) && has_arg(a, kResidual))
    return "a residual and an epilogue program";
  if (half_input(a)) return supports_half_linear(a);
  if (!has_arg(a, kResidual)) return supports_linear(a);
  if (!a[kBias].is_none() && !a[kBias].tensor.is_contiguous())
    return "a bias that is not contiguous";
  std::string why = supports_product(a);
  if (!why.empty()) return why;
  int64_t stride = 0;
  if (!rows_of(a[kResidual].tensor, product_rows(a), &stride))
    return "a residual whose rows are not evenly strided";
  return "";
}

std::string supports_gated_mlp(const Args& a) {
  if (half_input(a)) return supports_half_gated_mlp(a);
  if (!a[kUpWeight].tensor.is_contiguous()) return "an up weight that is not contiguous";
  return supports_product(a);
}

void check_operands(const std::string& why, const char* op, const Tensor& x) {
  IP_CHECK(why.empty(), kUnsupported, "[cuda] ", op, ": input ", shape_str(x.shape()),
           " with strides ", shape_str(x.strides()), ": ", why);
}

GemvHalf half_product(const Args& a, const std::vector<Tensor>& outs, const char* op) {
  GemvHalf g;
  check_operands(half_operands(a, outs[0], &g), op, a[kInput].tensor);
  return g;
}

void run_half_linear(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  GemvHalf g = half_product(a, outs, kLinear);
  if (has_arg(a, kResidual)) {
    int64_t stride = 0;
    IP_CHECK(rows_of(a[kResidual].tensor, g.n, &stride), kUnsupported, "[cuda] ", kLinear,
             ": a residual whose rows are not evenly strided");
    if (g.rows > 0 && g.n > 0) g.residual = a[kResidual].tensor.data_ptr();
    g.residual_stride = stride;
    g.epilogue = GemvEpilogue::kResidual;
  }
  add_epilogue(a, kLinearEpilogue, kLinear, &g);
  gemv_half(g, ctx.queue);
}

GateActivation gate_activation(const Args& a) {
  return activation_of(a) == kGeluTanh ? GateActivation::kGeluTanh : GateActivation::kSilu;
}

GemvHalf half_gated_mlp(const Args& a, const std::vector<Tensor>& outs, const char* op) {
  GemvHalf g = half_product({a[kInput], a[kWeight], Value::none(), Value::none()}, outs, op);
  if (g.rows > 0 && g.n > 0) g.w2 = a[kUpWeight].tensor.data_ptr();
  g.epilogue = GemvEpilogue::kSwiGLU;
  g.activation = gate_activation(a);
  return g;
}

GemvBf16 linear(const Args& a, const std::vector<Tensor>& outs) {
  GemvBf16 g;
  check_operands(operands(a, outs[0], &g), kLinear, a[kInput].tensor);
  if (!a[kBias].is_none()) g.bias = static_cast<const float*>(a[kBias].tensor.data_ptr());
  return g;
}

void run_add(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  GemvBf16 g;
  check_operands(operands(a, outs[0], &g), kLinear, a[kInput].tensor);
  if (!a[kBias].is_none()) g.bias = static_cast<const float*>(a[kBias].tensor.data_ptr());
  int64_t stride = 0;
  IP_CHECK(rows_of(a[kResidual].tensor, g.n, &stride), kUnsupported, "[cuda] ", kLinear,
           ": a residual whose rows are not evenly strided");
  if (g.rows > 0 && g.n > 0) g.residual = static_cast<const float*>(a[kResidual].tensor.data_ptr());
  g.residual_stride = stride;
  g.epilogue = GemvEpilogue::kResidual;
  gemv_bf16(g, ctx.queue);
}

// fused_linear: the residual epilogue when it has one.
void run(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  if (half_input(a))
    run_half_linear(a, outs, ctx);
  else if (has_arg(a, kResidual))
    run_add(a, outs, ctx);
  else
    gemv_bf16(linear(a, outs), ctx.queue);
}

GemvBf16 gated_mlp(const Args& a, const std::vector<Tensor>& outs, const char* op) {
  GemvBf16 g;
  check_operands(operands(a, outs[0], &g), op, a[kInput].tensor);
  if (g.rows > 0 && g.n > 0) g.w2 = a[kUpWeight].tensor.data_ptr();
  g.epilogue = GemvEpilogue::kSwiGLU;
  g.activation = gate_activation(a);
  return g;
}

void run_gated_mlp(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  if (half_input(a)) return gemv_half(half_gated_mlp(a, outs, kGatedMlp), ctx.queue);
  gemv_bf16(gated_mlp(a, outs, kGatedMlp), ctx.queue);
}

// The norm prologue: (x, norm_weight, eps, w, w2 or bias, ...) as the product's (x, w, w2 or
// bias, ...); the kernel normalises the rows it reads.
Args product_args(const char* norm_form, const Args& a) {
  return fused_linear::product_args(norm_form, a[kInput], a);
}

// The linear form's rotary epilogue (cos, sin, rotary_cols), when rotary_cols > 0.
bool has_rotary(const Args& a) {
  return rotary_cols(a) > 0;
}

// cos and sin of the input's dtype (float32, or T for gemv_half).
std::string supports_rotary(const Args& a) {
  if (!has_rotary(a)) return "";
  const Tensor& c = a[kCos].tensor;
  const Tensor& s = a[kSin].tensor;
  const int64_t d = c.dim() ? c.size(-1) : 0, cols = a[kRotaryCols].i;
  const DType t = a[kInput].tensor.dtype();
  if (d == 0 || d % 8 != 0 || c.numel() != d || s.numel() != d || c.stride(-1) != 1 ||
      s.stride(-1) != 1 || c.dtype() != t || s.dtype() != t)
    return "a rotary table that is not a row of the input's dtype of a head dim divisible by 8";
  if (cols % d != 0 || cols > product_rows(product_args(kNormLinear, a)))
    return "rotary columns that are not whole heads of the product";
  return "";
}

// A half norm form's norm (upcast_rms_norm): its weight of the input's dtype, or float32 for
// norm="upcast_float_weight", either for "upcast_one_plus_weight", contiguous [k], k within
// gemv_half's shared row; a LayerNorm (norm="layer"): its weight and bias (when given) contiguous
// [k] of the input's dtype.
std::string supports_half_norm(const char* norm_form, const Args& a) {
  const std::string norm = norm_of(norm_form, a);
  if (norm == kNormRms) return "rms_norm at a half dtype (the GPU runs upcast_rms_norm's form)";
  const Tensor& nw = a[kNormWeight].tensor;
  const Tensor& x = a[kInput].tensor;
  if (norm == kNormLayer) {
    auto fits = [&](const Tensor& t) {
      return t.is_contiguous() && t.dtype() == x.dtype() && t.dim() == 1 && t.size(0) == x.size(-1);
    };
    if (!fits(nw) || (has_arg(a, kNormBias) && !fits(a[kNormBias].tensor)))
      return "a LayerNorm weight or bias that is not a contiguous [k] of the input's dtype";
    if (x.size(-1) > kGemvHalfMaxNormK) return "a norm over more elements than a block holds";
    return "";
  }
  const DType want = norm == kNormUpcastFloatWeight ? DType::kFloat32 : x.dtype();
  const bool either = norm == kNormUpcastOnePlusWeight && nw.dtype() == DType::kFloat32;
  if (!nw.is_contiguous() || (nw.dtype() != want && !either) || nw.dim() != 1 ||
      nw.size(0) != x.size(-1))
    return "a norm weight that is not a contiguous [k] of its form's dtype";
  if (x.size(-1) > kGemvHalfMaxNormK) return "a norm over more elements than a block holds";
  return "";
}

void add_half_norm(const char* norm_form, const Args& a, GemvHalf* g) {
  if (g->rows > 0 && g->n > 0) g->norm_w = a[kNormWeight].tensor.data_ptr();
  g->norm_w_float = a[kNormWeight].tensor.dtype() == DType::kFloat32;
  const std::string norm = norm_of(norm_form, a);
  g->norm_one_plus = norm == kNormUpcastOnePlusWeight;
  g->eps = static_cast<float>(a[kEps].as_double(norm_form));
  if (norm == kNormLayer) {
    g->norm_layer = true;
    g->layer_eps = a[kEps].as_double(norm_form);
    if (g->rows > 0 && g->n > 0 && has_arg(a, kNormBias) && a[kNormBias].tensor.numel() > 0)
      g->norm_b = a[kNormBias].tensor.data_ptr();
  }
}

std::string supports_norm(const Args& a) {
  const Tensor& nw = a[kNormWeight].tensor;
  if (!nw.is_contiguous() || nw.dtype() != DType::kFloat32 || nw.dim() != 1 ||
      nw.size(0) != a[kInput].tensor.size(-1))
    return "a norm weight that is not a contiguous float32 [k]";
  return "";
}

std::string supports_norm_linear(const Args& a) {
  pointwise::GeluNew gelu;
  const std::string epilogue = epilogue_form(a, kNormEpilogue, &gelu);
  if (!epilogue.empty()) return epilogue;
  if (half_input(a)) {
    std::string why = supports_half_norm(kNormLinear, a);
    if (why.empty()) why = supports_rotary(a);
    return why.empty() ? supports_half_linear(product_args(kNormLinear, a)) : why;
  }
  if (norm_of(kNormLinear, a) != kNormRms) return "an upcast norm or a LayerNorm at float32";
  std::string why = supports_norm(a);
  if (why.empty()) why = supports_rotary(a);
  return why.empty() ? supports_linear(product_args(kNormLinear, a)) : why;
}

void add_norm(const Args& a, GemvBf16* g) {
  if (g->rows > 0 && g->n > 0)
    g->norm_w = static_cast<const float*>(a[kNormWeight].tensor.data_ptr());
  g->eps = static_cast<float>(a[kEps].as_double("rms_norm"));
}

GemvBf16 norm_linear(const Args& a, const std::vector<Tensor>& outs) {
  const Args p = product_args(kNormLinear, a);
  GemvBf16 g;
  check_operands(operands(p, outs[0], &g), kNormLinear, a[kInput].tensor);
  if (!p[kBias].is_none()) g.bias = static_cast<const float*>(p[kBias].tensor.data_ptr());
  add_norm(a, &g);
  if (has_rotary(a)) {
    IP_CHECK(supports_rotary(a).empty(), kUnsupported, "[cuda] ", kNormLinear, ": ",
             supports_rotary(a));
    g.cos = static_cast<const float*>(a[kCos].tensor.data_ptr());
    g.sin = static_cast<const float*>(a[kSin].tensor.data_ptr());
    g.rot_cols = a[kRotaryCols].i;
    g.rot_d = a[kCos].tensor.size(-1);
  }
  return g;
}

// rms_norm_linear at a half dtype, its rotary epilogue too.
GemvHalf half_norm_linear(const Args& a, const std::vector<Tensor>& outs) {
  GemvHalf g = half_product(product_args(kNormLinear, a), outs, kNormLinear);
  add_half_norm(kNormLinear, a, &g);
  if (has_rotary(a)) {
    IP_CHECK(supports_rotary(a).empty(), kUnsupported, "[cuda] ", kNormLinear, ": ",
             supports_rotary(a));
    g.cos = a[kCos].tensor.data_ptr();
    g.sin = a[kSin].tensor.data_ptr();
    g.rot_cols = a[kRotaryCols].i;
    g.rot_d = a[kCos].tensor.size(-1);
  }
  add_epilogue(a, kNormEpilogue, kNormLinear, &g);
  return g;
}

void run_norm_linear(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  if (half_input(a)) return gemv_half(half_norm_linear(a, outs), ctx.queue);
  gemv_bf16(norm_linear(a, outs), ctx.queue);
}

// rms_norm_gated_mlp at a half dtype.
GemvHalf half_norm_gated_mlp(const Args& a, const std::vector<Tensor>& outs) {
  GemvHalf g = half_gated_mlp(product_args(kNormGatedMlp, a), outs, kNormGatedMlp);
  add_half_norm(kNormGatedMlp, a, &g);
  return g;
}

std::string supports_norm_gated_mlp(const Args& a) {
  if (half_input(a)) {
    const std::string why = supports_half_norm(kNormGatedMlp, a);
    return why.empty() ? supports_half_gated_mlp(product_args(kNormGatedMlp, a)) : why;
  }
  if (norm_of(kNormGatedMlp, a) != kNormRms) return std::string("an upcast norm at float32");
  const std::string why = supports_norm(a);
  return why.empty() ? supports_gated_mlp(product_args(kNormGatedMlp, a)) : why;
}

void run_norm_gated_mlp(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  if (half_input(a)) return gemv_half(half_norm_gated_mlp(a, outs), ctx.queue);
  GemvBf16 g = gated_mlp(product_args(kNormGatedMlp, a), outs, kNormGatedMlp);
  add_norm(a, &g);
  gemv_bf16(g, ctx.queue);
}

}  // namespace

bool row_write_of(const StepCall& write, const void* y, int64_t n, DType dtype, GemvRowWrite* w) {
  const Args& a = *write.args;
  const Value& cache = a[kv_cache::kCache];
  if (!cache.is_tensor() || !cache.tensor.same_view((*write.outs)[0])) return false;
  const IndexMap m = kv_cache_map(a, *write.outs, write.ctx);
  const Operand &v = m.values, &s = m.strided;
  if (v.dtype != dtype || s.dtype != dtype || v.ndim != 4 || s.ndim != 4 || v.size[0] != 1 ||
      v.size[2] != 1 || v.stride[3] != 1 || s.stride[3] != 1 || s.stride[2] != 0 ||
      (v.size[1] > 1 && v.stride[1] != v.size[3]) || (m.coord_dim != -1 && m.coord_dim != 2) ||
      (!m.index.is_number && m.index.ndim != 4))
    return false;
  const std::ptrdiff_t item = static_cast<std::ptrdiff_t>(dtype_size(dtype));
  const std::ptrdiff_t off = v.data - static_cast<const char*>(y);
  const int64_t cols = v.size[1] * v.size[3];
  if (off < 0 || off % item != 0 || off / item + cols > n || v.size[3] == 0 ||
      cols > INT32_MAX)  // the kernels place a column with 32-bit division
    return false;
  w->dst = s.data;
  w->col0 = off / item;
  w->cols = cols;
  w->d = v.size[3];
  w->dst_stride = s.stride[1];
  w->unit = m.unit;
  w->extent = m.extent;
  if (m.index.is_number) {
    w->number = m.index.i;
  } else {
    w->index = m.index.data;
    w->index_dtype = m.index.dtype;
    w->index_stride = m.index.stride[1];
  }
  w->wrap_negative = m.wrap_negative;
  w->error = m.error;
  w->error_step = m.error_step;
  return true;
}

namespace {

// fused_linear without its residual at a half dtype (the form that takes row writes).
GemvHalf half_linear(const Args& a, const std::vector<Tensor>& outs) {
  return half_product(a, outs, kLinear);
}

// The cache writes of a half product's slices (the engine's epilogue writes) into g, where its
// kernel runs them (none: g as it is).
bool add_half_row_writes(const StepCall* writes, int n, GemvHalf* g) {
  if (n == 0) return true;
  if (g->epilogue != GemvEpilogue::kNone) return false;
  for (int k = 0; k < n; ++k)
    if (!row_write_of(writes[k], g->y, g->n, g->dtype, &g->writes[g->n_writes++])) return false;
  return gemv_half_runs_writes(*g);
}

// A q/k/v product and the k and v cache writes of its slices (the engine's epilogue writes): the
// float32 GEMV's (`product`) or gemv_half's (`half`), by the input's dtype.
WritesKernel with_row_writes(GemvBf16 (*product)(const Args&, const std::vector<Tensor>&),
                             GemvHalf (*half)(const Args&, const std::vector<Tensor>&),
                             Supports supports) {
  return [=](const StepCall& p, const StepCall* writes, int n) {
    if (n > kMaxEpilogueWrites || !supports(*p.args).empty()) return false;
    if (half_input(*p.args)) {
      GemvHalf g = half(*p.args, *p.outs);
      if (!add_half_row_writes(writes, n, &g)) return false;
      gemv_half(g, p.ctx.queue);
      return true;
    }
    GemvBf16 g = product(*p.args, *p.outs);
    for (int k = 0; k < n; ++k)
      if (!row_write_of(writes[k], g.y, g.n, DType::kFloat32, &g.writes[g.n_writes++]))
        return false;
    if (!gemv_bf16_runs_writes(g)) return false;
    gemv_bf16(g, p.ctx.queue);
    return true;
  };
}

// upcast_rms_norm(x, weight, eps, weight_in_float, weight_offset, residual) joined before a half
// product whose input row is its result (launch_groups.h's prologues): g.pre from the norm's
// operands, when they are dense rows of g's dtype and length (the weight of the dtype, or
// float32 applied in float).
bool pre_norm_of(const StepCall& norm, GemvHalf* g) {
  const Args& a = *norm.args;
  if (a.size() < 3 || !a[0].is_tensor() || !a[1].is_tensor() || norm.outs->size() != 1)
    return false;
  auto row = [&](const Tensor& t) {
    return t.dtype() == g->dtype && t.numel() == g->k && t.is_contiguous();
  };
  const Tensor &x = a[0].tensor, &w = a[1].tensor, &out = (*norm.outs)[0];
  if (g->rows != 1 || !row(x) || !row(out) || out.data_ptr() != g->x) return false;
  const bool in_float = a.size() > 3 && a[3].as_bool("upcast_rms_norm");
  const double offset = nn::norm_weight_offset(a, nn::kUpcastNormOffsetArg);
  const Value* r =
      a.size() > nn::kUpcastNormResidualArg && a[nn::kUpcastNormResidualArg].is_tensor()
          ? &a[nn::kUpcastNormResidualArg]
          : nullptr;
  const bool w_float = w.dtype() == DType::kFloat32;
  if ((r && !row(r->tensor)) || w.dim() != 1 || w.numel() != g->k || !w.is_contiguous() ||
      (!w_float && w.dtype() != g->dtype) || (w_float && !in_float))
    return false;
  g->pre.x = x.data_ptr();
  g->pre.w = w.data_ptr();
  g->pre.residual = r ? r->tensor.data_ptr() : nullptr;
  g->pre.w_float = w_float;
  g->pre.in_float = in_float || offset != 0;
  g->pre.offset = static_cast<float>(offset);
  g->pre.eps = static_cast<float>(a[2].as_double("upcast_rms_norm"));
  return true;
}

// A norm step, then a half product with an upcast norm of its own whose input row is the norm's
// result, and the product's cache writes: one gemv_half launch.
PrologueKernel with_pre_norm(GemvHalf (*half)(const Args&, const std::vector<Tensor>&),
                             Supports supports) {
  return [=](const StepCall& norm, const StepCall& p, const StepCall* writes, int n) {
    if (n > kMaxEpilogueWrites || !half_input(*p.args) || !supports(*p.args).empty()) return false;
    GemvHalf g = half(*p.args, *p.outs);
    if (!add_half_row_writes(writes, n, &g) || !pre_norm_of(norm, &g) ||
        !gemv_half_runs_pre_norm(g))
      return false;
    gemv_half(g, p.ctx.queue);
    return true;
  };
}

}  // namespace

void register_fused_linear_kernels(KernelTable& table) {
  table.add(DeviceType::kCuda, kLinear, run, supports);
  table.add(DeviceType::kCuda, kGatedMlp, run_gated_mlp, supports_gated_mlp);
  table.add(DeviceType::kCuda, kNormLinear, run_norm_linear, supports_norm_linear);
  table.add(DeviceType::kCuda, kNormGatedMlp, run_norm_gated_mlp, supports_norm_gated_mlp);
  LaunchKernels::get().add_epilogue_writes(kLinear, "kv_cache_update",
                                           with_row_writes(linear, half_linear, supports_linear));
  LaunchKernels::get().add_epilogue_writes(
      kNormLinear, "kv_cache_update",
      with_row_writes(norm_linear, half_norm_linear, supports_norm_linear));
  LaunchKernels::get().add_prologue("upcast_rms_norm", kNormLinear,
                                    with_pre_norm(half_norm_linear, supports_norm_linear));
  LaunchKernels::get().add_prologue("upcast_rms_norm", kNormGatedMlp,
                                    with_pre_norm(half_norm_gated_mlp, supports_norm_gated_mlp));
}

}  // namespace inplace::cuda
