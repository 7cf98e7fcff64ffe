// fused_linear: x @ w^T (+ bias) (+ residual), computed in x's dtype with a weight that may be
// of a narrower float dtype: `linear(x, w.to(float32))` without materialising the float32
// weight (the fuse_weight_casts pass), so a step reads the weight's bf16 bytes once, and with
// its residual the add after o_proj and down_proj (fuse_linear_epilogues) in the same step.
// rms_norm_linear: fused_linear(rms_norm(x, [k], norm_weight, eps), w, bias), its RMSNorm
// prologue joined by fuse_norm_prologues (a layer's input norm and its q/k/v product); it may
// also rotate a prefix of its columns (cos, sin, rotary_cols: fuse_rotary_epilogues): each
// d-wide block of the first rotary_cols columns of every row becomes rotary_embedding(block,
// cos, sin), cos and sin d elements (one position). Every backend computes each result element
// by the same float operations, in the same order, as the chain's kernels. Both may read more
// weights (more_weights: merge_sibling_linears' grouped product), their columns after weight's,
// and a bias of each (more_biases: the siblings' own, where they have biases). rms_norm_linear's
// norm may be a LayerNorm instead (norm="layer", with norm_bias: GPT-2's ln_1, ln_2 and ln_f
// before the products prepare_in_out_weights made), and either may run an epilogue program on
// its finished value (fuse_product_epilogues: GPT-2's GELU after c_fc).
// fused_addmm: the product over an [in, out] weight (addmm's), its bias, residual and LayerNorm
// prologue (ops/fused_addmm_args.h).
// Shape rules and argument positions: ops/fused_linear_args.h.
#include "ops/fused_addmm_args.h"
#include "ops/fused_linear_args.h"
#include "ops/registry.h"

namespace inplace {

void register_fused_linear_ops(Registry& r) {
  using namespace fused_linear;
  r.add_out(
      "fused_linear(Tensor input, Tensor weight, Tensor? bias=None, Tensor? residual=None, "
      "Tensor[] more_weights=[], Tensor[] more_biases=[], int[] epilogue=[]) -> Tensor",
      [](const Args& a) { return std::vector<Tensor>{linear_meta(a)}; }, nullptr);
  r.add_out(
      "rms_norm_linear(Tensor input, Tensor norm_weight, float eps, Tensor weight, Tensor? "
      "bias=None, Tensor? cos=None, Tensor? sin=None, int rotary_cols=0, str norm=\"rms_norm\", "
      "Tensor[] more_weights=[], Tensor[] more_biases=[], Tensor? norm_bias=None, int[] "
      "epilogue=[]) -> Tensor",
      [](const Args& a) { return std::vector<Tensor>{norm_form_meta(kNormLinear, a)}; }, nullptr);
  r.add_out(
      "fused_addmm(Tensor input, Tensor weight, Tensor? bias=None, Tensor? residual=None, float? "
      "eps=None, Tensor? norm_weight=None, Tensor? norm_bias=None, int[] epilogue=[]) -> Tensor",
      [](const Args& a) { return std::vector<Tensor>{fused_addmm::meta(a)}; }, nullptr);
}

}  // namespace inplace
