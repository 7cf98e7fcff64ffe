// fuse_weight_casts (an engine pass): `linear(x, w.to(float32))` with w a bfloat16 constant and
// x float32 becomes `inplace.fused_linear(x, w)`: the product reads the bf16 weight and
// accumulates in float32, instead of writing a float32 copy of the weight on every call and
// reading it back (three times the bytes). The cast is dropped when nothing else reads it.
// Exact: widening bf16 to f32 is exact, and both forms sum in the same order. Likewise
// `F.embedding(ids, w).to(float32)` becomes `inplace.fused_embedding(ids, w)`.
// At a half dtype (a model exported in bf16 or fp16) there is no cast: `linear(x, w, b)` with x
// and w of one half dtype, at decode size (options.decode_max_rows rows of x), becomes
// `inplace.fused_linear(x, w, b)`, the same product (its kernels round as linear's), so that the
// epilogue and prologue fusions that follow reach it.
#include "ops/registry.h"
#include "passes/dtype_of.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

class FuseWeightCastsPass : public Pass {
 public:
  std::string name() const override { return "fuse_weight_casts"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable& metas = cached_metas(g, ctx);
    DtypeOf dtypes(metas);
    std::vector<Node*> linears;
    for (Node* n : g.nodes())
      if (op_name(n) == "linear") linears.push_back(n);
    for (Node* n : linears) {
      if (n->args.size() < 2 || !n->args[0].is_node() || !n->args[1].is_node()) continue;
      if (half_product(metas, n, ctx.options.decode_max_rows)) {
        n->target = "inplace.fused_linear";
        continue;
      }
      Node* cast = n->args[1].node;
      const std::string cast_name = op_name(cast);
      if (cast_name != "to" && cast_name != "_to_copy") continue;
      if (cast->args.empty() || !cast->args[0].is_node()) continue;
      Node* weight = cast->args[0].node;
      if (weight->op != NodeOp::kGetAttr) continue;
      auto c = g.constants.find(weight->target);
      if (c == g.constants.end() || c->second.dtype() != DType::kBFloat16 || c->second.dim() != 2)
        continue;
      if (dtypes.of(cast) != DType::kFloat32 || dtypes.of(n->args[0].node) != DType::kFloat32)
        continue;
      n->target = "inplace.fused_linear";
      n->args[1] = Value::node_ref(weight);
      if (g.users(cast).empty()) g.erase(cast);
    }
    fuse_embedding_casts(g, dtypes);
  }

 private:
  // linear(x, w[, b]) at decode size with x, w (and b) of one half dtype, arguments positional.
  static bool half_product(const MetaTable& metas, const Node* n, int64_t rows) {
    if (!n->kwargs.empty() || n->args.size() > 3) return false;
    const Tensor* x = metas.tensor(n->args[0].node);
    const Tensor* w = metas.tensor(n->args[1].node);
    if (!x || !w || (x->dtype() != DType::kBFloat16 && x->dtype() != DType::kFloat16) ||
        w->dtype() != x->dtype() || w->dim() != 2 || x->dim() < 1 || x->size(-1) != w->size(1) ||
        w->size(1) == 0 || x->numel() / w->size(1) > rows)
      return false;
    if (n->args.size() < 3 || n->args[2].is_none()) return true;
    const Tensor* b = n->args[2].is_node() ? metas.tensor(n->args[2].node) : nullptr;
    return b && b->dtype() == x->dtype() && b->dim() == 1;
  }

  // `F.embedding(ids, w).to(float32)` with w a bfloat16 2-D constant, the cast the rows' only
  // reader: the cast becomes `inplace.fused_embedding(ids, w)`, one step instead of a
  // gather and a widening copy.
  static void fuse_embedding_casts(Graph& g, DtypeOf& dtypes) {
    std::vector<Node*> casts;
    for (Node* n : g.nodes())
      if (op_name(n) == "to" || op_name(n) == "_to_copy") casts.push_back(n);
    for (Node* cast : casts) {
      if (cast->args.empty() || !cast->args[0].is_node()) continue;
      Node* rows = cast->args[0].node;
      // Past (input, weight) only padding_idx (gradients only) and defaults; no max_norm.
      if (op_name(rows) != "embedding_functional" || rows->args.size() < 2 ||
          (rows->args.size() > 3 && !rows->args[3].is_none()) || !rows->kwargs.empty() ||
          !rows->args[0].is_node() || !rows->args[1].is_node() || g.users(rows).size() != 1)
        continue;
      Node* weight = rows->args[1].node;
      if (weight->op != NodeOp::kGetAttr) continue;
      auto c = g.constants.find(weight->target);
      if (c == g.constants.end() || c->second.dtype() != DType::kBFloat16 || c->second.dim() != 2 ||
          dtypes.of(cast) != DType::kFloat32)
        continue;
      cast->op = NodeOp::kCallFunction;
      cast->target = "inplace.fused_embedding";
      cast->args = {rows->args[0], Value::node_ref(weight)};
      cast->kwargs.clear();
      g.erase(rows);
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_weight_casts_pass() {
  return std::make_unique<FuseWeightCastsPass>();
}

}  // namespace inplace
