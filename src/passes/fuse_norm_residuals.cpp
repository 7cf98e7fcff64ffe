// fuse_norm_residuals (an engine pass, after the norm and product fusions, before fuse_pointwise):
// a residual add of a norm's result,
//   add(r, upcast_rms_norm(x, w, eps, ..))   (or add(norm, r)), alpha 1
// where nothing else reads the norm and r has the norm's shape and dtype, becomes one step,
// upcast_rms_norm(x, w, eps, .., residual=r): Gemma 3 (and Gemma 2) normalise the output of
// attention and of the MLP before adding it to the residual stream, two such steps a layer. Every
// backend computes the sum as add at the dtype does (the float sum of the two rounded once), so
// the fused step is bitwise the two; on a GPU one launch instead of two.
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

class FuseNormResidualsPass : public Pass {
 public:
  std::string name() const override { return "fuse_norm_residuals"; }
  void run(Graph& g, PassContext& ctx) override {
    std::vector<Node*> adds;
    for (Node* n : g.nodes())
      if (op_name(n) == "add") adds.push_back(n);
    // The metas again for each: a fused step made here may be the next one's residual.
    for (Node* n : adds) fuse(g, cached_metas(g, ctx), n);
  }

 private:
  static void fuse(Graph& g, const MetaTable& metas, Node* add) {
    if (add->args.size() != 2 || !add->args[0].is_node() || !add->args[1].is_node()) return;
    for (const auto& [key, v] : add->kwargs)
      if (key != "alpha" || !is_number_one(v)) return;
    const Tensor* y = metas.tensor(add);
    if (!y) return;
    for (int side : {1, 0}) {
      Node* norm = add->args[side].node;
      Node* r = add->args[1 - side].node;
      if (op_name(norm) != "upcast_rms_norm" || g.users(norm).size() != 1 ||
          !norm->kwargs.empty() || norm == r)
        continue;
      ResolvedCall rc = resolve_node(*norm);
      if (rc.args.size() < 6 || !rc.args[5].is_none()) continue;
      const Tensor* nm = metas.tensor(norm);
      const Tensor* rm = metas.tensor(r);
      if (!nm || !rm || rm->shape() != nm->shape() || rm->dtype() != nm->dtype() ||
          y->shape() != nm->shape() || y->dtype() != nm->dtype())
        continue;
      std::vector<Value> args = rc.args;
      args[5] = ref(r);
      Emitter e(g, add);
      Node* fused = e.call("inplace.upcast_rms_norm", std::move(args), {}, add->name + "_norm");
      fused->meta = add->meta;
      g.replace_all_uses_with(add, fused);
      g.erase(add);
      g.erase(norm);
      return;
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_norm_residuals_pass() {
  return std::make_unique<FuseNormResidualsPass>();
}

}  // namespace inplace
