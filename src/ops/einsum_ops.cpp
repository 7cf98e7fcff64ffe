// einsum: the equation is read against the operands' shapes by ops/einsum_plan.h, which the
// kernels read too.
#include "ops/einsum_plan.h"
#include "ops/registry.h"

namespace inplace {

void register_einsum_ops(Registry& r) {
  // `path` (opt_einsum's contraction order) only changes the order of the products: ignored;
  // operands are always contracted left to right.
  r.add_out(
      "einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor",
      [](const Args& a) {
        const std::vector<Tensor> ts = einsum_operands(a);
        const EinsumPlan p = plan_einsum(a, ts);
        return std::vector<Tensor>{Tensor::meta(p.out_shape, einsum_result_dtype(p, ts))};
      },
      nullptr);
  r.add_alias("torch.functional.einsum", "einsum");
}

}  // namespace inplace
