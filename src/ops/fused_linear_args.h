// The fused linear family's arguments as every backend reads them, and their shape rules. Each
// op computes in its input's dtype; its weights may be of a narrower float dtype (a bfloat16
// weight with a float32 input: the product reads the weight's bytes where they lie, widening as
// it goes, instead of a float32 copy of the weight made on every call):
//   fused_linear(input, weight, bias, residual, more_weights, more_biases, epilogue)
//                                                    = e([residual +] linear(input, weight, bias))
//   gated_mlp(input, gate_weight, up_weight, activation)
//                                                    = act(input @ gate_weight^T) *
//                                                      (input @ up_weight^T)
//                                                      (act: "silu" or "gelu_tanh")
//   rms_norm_linear(input, norm_weight, eps, weight, bias, cos, sin, rotary_cols, norm,
//                   more_weights, more_biases, norm_bias, epilogue)
//   rms_norm_gated_mlp(input, norm_weight, eps, gate_weight, up_weight, activation, norm)
// A norm form (an RMSNorm prologue) is its product on the normalised input: the product's
// arguments are the input, then the ones after eps. Its `norm` names the norm: "rms_norm"
// (rms_norm(input, [k], norm_weight, eps)), "upcast" or "upcast_float_weight"
// (upcast_rms_norm(input, norm_weight, eps, weight_in_float), Hugging Face's RMSNorm at a half
// dtype: ops/nn_ops.cpp), or "upcast_one_plus_weight" (Gemma's: upcast_rms_norm(input,
// 1 + norm_weight.to(float32), eps, True), norm_weight the model's own, of the input's dtype or
// float32; 1 + w computed as the chain's float32 add computes it), or "layer" (layer_norm(input,
// [k], norm_weight, norm_bias, eps): GPT-2's LayerNorm, its weight and bias of the input's dtype,
// the bias optional).
// e, the epilogue (fused_linear's and rms_norm_linear's `epilogue`; [] : none), is a
// fused_pointwise program over the one input, the product's finished value, whose result is of
// the input's dtype (GPT-2's GELU-tanh chain after c_fc: fuse_product_epilogues); not with a
// rotary epilogue.
// more_weights (a grouped product: merge_sibling_linears where the weights are the caller's, which
// it does not copy into one stacked constant): further weights of weight's dtype and k, at most
// kMaxWeights in all; the result's columns are the product with weight, then with each further
// weight in order, exactly the product with the weights stacked along the output dim (bias and
// residual span all the columns). more_biases (the siblings' own biases, the caller's tensors,
// never concatenated): one per further weight; bias is then weight's alone (its rows) and each
// block of columns adds its own weight's bias, as the separate products do.
// At a half input dtype every op of the chain rounds its result to that dtype, as the chain
// does: the product (+ bias) is rounded before the residual is added (in float, rounded again);
// the gate and up products, act(gate) and the gated product are each rounded.
#pragma once
#include "ops/registry.h"

namespace inplace::fused_linear {

inline constexpr const char* kLinear = "fused_linear";
inline constexpr const char* kGatedMlp = "gated_mlp";
inline constexpr const char* kNormLinear = "rms_norm_linear";
inline constexpr const char* kNormGatedMlp = "rms_norm_gated_mlp";
// The activations gated_mlp computes: silu (a SwiGLU MLP's: Llama, Mistral, Qwen2, Phi-3) and
// gelu_tanh (gelu(x, approximate='tanh'), a GeGLU MLP's: Gemma), each as its own op's kernel.
inline constexpr const char* kSilu = "silu";
inline constexpr const char* kGeluTanh = "gelu_tanh";

// Argument positions of the products.
enum Arg {
  kInput = 0,
  kWeight = 1,
  kBias = 2,
  kUpWeight = 2,
  kResidual = 3,
  kActivation = 3,
  kMoreWeights = 4,     // fused_linear's
  kMoreBiases = 5,      // fused_linear's
  kLinearEpilogue = 6,  // fused_linear's
};
// Argument positions of the norm forms (input is kInput; the product's weight, then its bias or
// up weight, from kProductWeight).
enum NormArg {
  kNormWeight = 1,
  kEps = 2,
  kProductWeight = 3,
  kNormActivation = 5,
  kCos = 5,
  kSin = 6,
  kRotaryCols = 7,
  kLinearNorm = 8,       // rms_norm_linear's norm
  kNormMoreWeights = 9,  // rms_norm_linear's more_weights
  kNormMoreBiases = 10,  // rms_norm_linear's more_biases
  kNormBias = 11,        // rms_norm_linear's norm_bias (norm "layer")
  kNormEpilogue = 12,    // rms_norm_linear's epilogue
  kGatedMlpNorm = 6,     // rms_norm_gated_mlp's norm
};

// The norms a norm form may name (its `norm` argument).
inline constexpr const char* kNormRms = "rms_norm";
inline constexpr const char* kNormUpcast = "upcast";
inline constexpr const char* kNormUpcastFloatWeight = "upcast_float_weight";
inline constexpr const char* kNormUpcastOnePlusWeight = "upcast_one_plus_weight";
inline constexpr const char* kNormLayer = "layer";

// Whether `args` (a node's, which may stop before the defaults, or bound ones) sets position
// `pos` to something other than None.
inline bool has_arg(const std::vector<Value>& args, size_t pos) {
  return args.size() > pos && !args[pos].is_none();
}

// Whether a node's or a bound call's `args` give position `pos` a non-empty list: more_weights,
// more_biases, an epilogue program.
inline bool has_items(const std::vector<Value>& args, size_t pos) {
  return args.size() > pos && args[pos].is_sequence() && !args[pos].items.empty();
}

// The most weights one grouped product reads (weight and its more_weights).
inline constexpr int kMaxWeights = 4;

// A product's weights (fused_linear's arguments, or a linear norm form's product_args): weight,
// then each of more_weights.
std::vector<Tensor> product_weights(const Args& a);
// The rows of every product weight together: the result's columns.
int64_t product_rows(const Args& a);
// Each product weight's bias, for its block of columns: bias and each of more_biases when the
// product has them, else bias's block (a view) or None.
std::vector<Value> product_biases(const Args& a);

// A norm form's product arguments: `input` (normalised, or the norm form's own input where the
// kernel normalises as it reads), then the product's own after eps.
Args product_args(const char* norm_form, const Value& input, const Args& a);
// The linear norm form's rotated columns (its rotary epilogue); 0 when it has none.
inline int64_t rotary_cols(const Args& a) {
  return a.size() > kRotaryCols ? a[kRotaryCols].as_int(kNormLinear) : 0;
}

// A gated MLP's activation (its `activation`, kSilu when left out); throws on another name.
std::string activation_of(const Args& a);

// Shape rules: the result's meta (the input's dtype); each throws naming the op unless the
// operands fit.
Tensor linear_meta(const Args& a);     // fused_linear
Tensor gated_mlp_meta(const Args& a);  // gated_mlp
// A norm form's result: rms_norm's rule, then its product's (and the linear form's rotary).
Tensor norm_form_meta(const char* norm_form, const Args& a);
// The linear norm form's rotary arguments, checked against its n result columns: false when
// rotary_cols is 0, else cos, sin (rows of one even d, the input's dtype) and cols.
bool rotary_of(const Args& a, int64_t n, Tensor* cos, Tensor* sin, int64_t* cols);
// Checks an epilogue program (at position `pos` of `a`, when given) over a result of `dtype`: one
// input, its result of that dtype; throws naming `op` (fused_linear, rms_norm_linear and
// fused_addmm take one).
void check_epilogue(const char* op, const Args& a, size_t pos, DType dtype);
// rms_norm's arguments (input, [k], norm_weight, eps) from a norm form's first three.
Args norm_args(const char* name, const Args& a);
// The norm a norm form names (kNormRms when its `norm` is left out); throws on another name.
std::string norm_of(const char* norm_form, const Args& a);
// The norm's op and arguments: rms_norm's (norm_args), layer_norm's (input, [k], norm_weight,
// norm_bias, eps, False) or upcast_rms_norm's (input, norm_weight, eps, weight_in_float). With
// "upcast_one_plus_weight" upcast_rms_norm's weight is `float_weight` (1 + norm_weight.to(float32),
// the caller's: one_plus_weight), or a float32 meta of norm_weight's shape where it is left out (a
// shape rule's).
const char* norm_op(const std::string& norm);
Args norm_op_args(const char* norm_form, const Args& a, const Value& float_weight = Value::none());

}  // namespace inplace::fused_linear
