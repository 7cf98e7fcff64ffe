// fused_addmm: a product over a weight stored [in, out] (addmm's mat2: GPT-2's Conv1D, whose
// weight is the caller's and is read where it lies, never transposed or copied), with its
// bias, a residual add after it and a LayerNorm before it:
//   fused_addmm(input, weight, bias, residual, eps, norm_weight, norm_bias, epilogue)
//     = e([residual +] addmm(bias, h.view(-1, k), weight).view(..., n)),
//   h = layer_norm(input, [k], norm_weight, norm_bias, eps) when eps is given, else input;
//   e = fused_pointwise([.], epilogue) when the epilogue program is given (a program over one
//   input whose result is of the input's dtype: GPT-2's GELU-tanh chain), else the identity.
// input [..., k], weight [k, n], bias and norm operands 1-D; every operand of the input's dtype
// (float32, bfloat16 or float16), as addmm asks. Each op of the chain rounds its result to that
// dtype and the fused op rounds where it does: the normalised input, then the product plus bias,
// then the residual's sum.
#pragma once
#include "ops/registry.h"

namespace inplace::fused_addmm {

inline constexpr const char* kName = "fused_addmm";

// Argument positions.
enum Arg {
  kInput = 0,
  kWeight = 1,
  kBias = 2,
  kResidual = 3,
  kEps = 4,  // None: no LayerNorm prologue
  kNormWeight = 5,
  kNormBias = 6,
  kEpilogue = 7,  // [] : none
};

// Whether `args` (a node's, which may stop before the defaults, or bound ones) sets position
// `pos` to something other than None.
inline bool has_arg(const std::vector<Value>& args, size_t pos) {
  return args.size() > pos && !args[pos].is_none();
}

// The shape rule: input [..., k] and weight [k, n] give [..., n] of the input's dtype; throws
// naming the op unless every operand fits.
Tensor meta(const Args& a);

// Whether the op has an epilogue program.
inline bool has_epilogue(const std::vector<Value>& args) {
  return args.size() > kEpilogue && args[kEpilogue].is_sequence() && !args[kEpilogue].items.empty();
}

// The LayerNorm prologue's arguments as layer_norm takes them (input, [k], weight, bias, eps,
// cudnn_enable); only when eps is given.
Args layer_norm_args(const Args& a);

}  // namespace inplace::fused_addmm
