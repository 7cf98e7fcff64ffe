// The bf16-weight products' arguments as every backend reads them, and their shape rules:
//   linear_bf16_weight(input, weight, bias)
//   linear_bf16_weight_add(input, weight, bias, residual)
//   swiglu_bf16_weight(input, gate_weight, up_weight)
//   rms_norm_linear_bf16_weight(input, norm_weight, eps, weight, bias, cos, sin, rotary_cols)
//   rms_norm_swiglu_bf16_weight(input, norm_weight, eps, gate_weight, up_weight)
// A norm form is its product on the normalised input: the product's arguments are the input,
// then the two after eps.
#pragma once
#include "ops/registry.h"

namespace inplace::linear_lowp {

inline constexpr const char* kLinear = "linear_bf16_weight";
inline constexpr const char* kLinearAdd = "linear_bf16_weight_add";
inline constexpr const char* kSwiglu = "swiglu_bf16_weight";
inline constexpr const char* kNormLinear = "rms_norm_linear_bf16_weight";
inline constexpr const char* kNormSwiglu = "rms_norm_swiglu_bf16_weight";

// Argument positions of the products.
enum Arg { kInput = 0, kWeight = 1, kBias = 2, kUpWeight = 2, kResidual = 3 };
// Argument positions of the norm forms (input is kInput; the product's weight, then its bias or
// up weight, from kProductWeight).
enum NormArg { kNormWeight = 1, kEps = 2, kProductWeight = 3, kCos = 5, kSin = 6, kRotaryCols = 7 };

// A norm form's product arguments: `input` (normalised, or the norm form's own input where the
// kernel normalises as it reads), then the product's two after eps.
inline Args product_args(const Value& input, const Args& a) {
  return {input, a[kProductWeight], a[kProductWeight + 1]};
}
// The linear norm form's rotated columns (its rotary epilogue); 0 when it has none.
inline int64_t rotary_cols(const Args& a) {
  return a.size() > kRotaryCols ? a[kRotaryCols].as_int(kNormLinear) : 0;
}

// Shape rules: the float32 result's meta; each throws naming the op unless the operands fit.
Tensor linear_meta(const Args& a);      // linear_bf16_weight
Tensor linear_add_meta(const Args& a);  // linear_bf16_weight_add
Tensor swiglu_meta(const Args& a);      // swiglu_bf16_weight
// The linear norm form's rotary arguments, checked against its n result columns: false when
// rotary_cols is 0, else cos, sin (float32 rows of one even d) and cols.
bool rotary_of(const Args& a, int64_t n, Tensor* cos, Tensor* sin, int64_t* cols);
// rms_norm's arguments (input, [k], norm_weight, eps) from a norm form's first three.
Args norm_args(const char* name, const Args& a);

}  // namespace inplace::linear_lowp
