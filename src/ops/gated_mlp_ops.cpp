// gated_mlp: act(x @ w_gate^T) * (x @ w_up^T), a gated MLP's gate and up products with the
// activation and the product of the two (SwiGLU: act = silu; GeGLU: act = gelu_tanh), made by
// fuse_linear_epilogues: one step that reads the weights once and writes only its result,
// without the temporaries and launches of the chain. rms_norm_gated_mlp: gated_mlp(rms_norm(x,
// [k], norm_weight, eps), ...), its RMSNorm prologue joined by fuse_norm_prologues (a layer's
// post-attention norm; `norm` as rms_norm_linear's). At a half dtype the gate and up products,
// act(gate) and the gated product are each rounded to it, as the chain's ops round them. Weights
// may be of a narrower float dtype than x, as fused_linear's. Every backend computes each result
// element by the same float operations, in the same order, as the chain's kernels. Shape rules
// and argument positions: ops/fused_linear_args.h.
#include "ops/fused_linear_args.h"
#include "ops/registry.h"

namespace inplace {

void register_gated_mlp_ops(Registry& r) {
  using namespace fused_linear;
  r.add_out(
      "gated_mlp(Tensor input, Tensor gate_weight, Tensor up_weight, str activation=\"silu\") -> "
      "Tensor",
      [](const Args& a) { return std::vector<Tensor>{gated_mlp_meta(a)}; }, nullptr);
  r.add_out(
      "rms_norm_gated_mlp(Tensor input, Tensor norm_weight, float eps, Tensor gate_weight, Tensor "
      "up_weight, str activation=\"silu\", str norm=\"rms_norm\") -> Tensor",
      [](const Args& a) { return std::vector<Tensor>{norm_form_meta(kNormGatedMlp, a)}; }, nullptr);
}

}  // namespace inplace
