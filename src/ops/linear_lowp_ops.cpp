// linear_bf16_weight: x @ w^T (+ bias) with a bfloat16 weight and float32 input, output and
// accumulation: `linear(x, w.to(float32))` without materialising the float32 weight, so a step
// reads the weight's bf16 bytes once. The fuse_weight_casts pass rewrites that pattern into it.
// Its shape rule and argument positions: ops/linear_lowp_args.h.
#include "ops/linear_lowp_args.h"
#include "ops/registry.h"

namespace inplace {

void register_linear_lowp_ops(Registry& r) {
  r.add_out(
      "linear_bf16_weight(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
      [](const Args& a) { return std::vector<Tensor>{linear_lowp::linear_meta(a)}; }, nullptr);
}

}  // namespace inplace
