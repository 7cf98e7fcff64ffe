// outer_product_matmul (an engine pass, optional rewrite): a matmul (or bmm) whose inner dim is 1,
//   a [.., M, 1] @ b [.., 1, N]
// is the broadcast product a * b: each element is one product and no sum. Hugging Face's rotary
// frequencies are such a product, `inv_freq[None, :, None] @ position_ids[:, None, :]`
// ([1, d/2, 1] @ [1, 1, S]); through a generic matmul path it costs a GEMM launch (508 us on the
// H200 through the generic path), as a mul one pointwise step that fuse_pointwise can join.
// Exact: a matmul's element is 0 + a * b, rounded to its dtype, and so is `a * b + 0` (the
// + 0 turns a -0 product into +0 as the matmul's sum from zero does; it is kept only for float
// dtypes, where fuse_pointwise joins it to the mul). Operands of one dtype, both at least 2-D.
#include "passes/dtype_of.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

class OuterProductMatmulPass : public Pass {
 public:
  std::string name() const override { return "outer_product_matmul"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable& metas = cached_metas(g, ctx);
    for (Node* n : g.nodes()) {
      const std::string op = op_name(n);
      if ((op != "matmul" && op != "bmm") || n->args.size() != 2 || !n->kwargs.empty() ||
          !n->args[0].is_node() || !n->args[1].is_node())
        continue;
      const Tensor* a = metas.tensor(n->args[0].node);
      const Tensor* b = metas.tensor(n->args[1].node);
      const Tensor* y = metas.tensor(n);
      if (!a || !b || !y || a->dim() < 2 || b->dim() < 2 || a->size(-1) != 1 || b->size(-2) != 1 ||
          a->dtype() != b->dtype() || a->dtype() != y->dtype() || a->dtype() == DType::kBool)
        continue;
      Node* product = g.insert_before(n, NodeOp::kCallFunction, "aten.mul.Tensor",
                                      {n->args[0], n->args[1]}, {}, n->name + "_outer");
      Node* result = product;
      if (is_floating(a->dtype()))
        result = g.insert_before(n, NodeOp::kCallFunction, "aten.add.Tensor",
                                 {Value::node_ref(product), Value::floating(0.0)}, {},
                                 n->name + "_outer_sum");
      result->meta = n->meta;
      g.replace_all_uses_with(n, result);
      g.erase(n);
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_outer_product_matmul_pass() {
  return std::make_unique<OuterProductMatmulPass>();
}

}  // namespace inplace
