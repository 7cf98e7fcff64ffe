// The bf16-weight linear with its decode epilogues, made by the fuse_linear_epilogues pass:
//   linear_bf16_weight_add(x, w, bias, residual) = residual + linear_bf16_weight(x, w, bias)
//   swiglu_bf16_weight(x, w_gate, w_up)          = silu(x @ w_gate^T) * (x @ w_up^T)
// Each is one step that reads the weights once and writes only its result: the residual add
// after o_proj and down_proj, and the gate/up pair with silu and mul of a SwiGLU MLP, without
// the temporaries and the extra launches of the chain. Every backend's kernel computes each
// result element by the same float operations, in the same order, as the chain's kernels.
// Their shape rules and argument positions: ops/linear_lowp_args.h.
#include "ops/linear_lowp_args.h"
#include "ops/registry.h"

namespace inplace {

void register_linear_lowp_fused_ops(Registry& r) {
  r.add_out(
      "linear_bf16_weight_add(Tensor input, Tensor weight, Tensor? bias, Tensor residual) -> "
      "Tensor",
      [](const Args& a) { return std::vector<Tensor>{linear_lowp::linear_add_meta(a)}; }, nullptr);
  r.add_out(
      "swiglu_bf16_weight(Tensor input, Tensor gate_weight, Tensor up_weight) -> Tensor",
      [](const Args& a) { return std::vector<Tensor>{linear_lowp::swiglu_meta(a)}; }, nullptr);
}

}  // namespace inplace
