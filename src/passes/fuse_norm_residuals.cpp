// fuse_norm_residuals (an engine pass, after the norm and product fusions, before fuse_pointwise):
// a residual add of a norm's result,
//   add(r, upcast_rms_norm(x, w, eps, ..))   (or add(norm, r)), alpha 1
// where nothing else reads the norm and r has the norm's shape and dtype, becomes one step,
// upcast_rms_norm(x, w, eps, .., residual=r): Gemma 3 (and Gemma 2) normalise the output of
// attention and of the MLP before adding it to the residual stream, two such steps a layer. Every
// backend computes the sum as add at the dtype does (the float sum of the two rounded once), so
// the fused step is bitwise the two; on a GPU one launch instead of two.
#include "ops/nn_args.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

class FuseNormResidualsPass : public Pass {
 public:
  std::string name() const override { return "fuse_norm_residuals"; }
  void run(Graph& g, PassContext& ctx) override {
    // Adds of a norm's result only (a cheap look first: a graph of many adds and no norm pays
    // nothing more), the metas once.
    std::vector<Node*> adds;
    for (Node* n : g.nodes())
      if (op_name(n) == "add" && n->args.size() == 2 &&
          (norm_operand(g, n->args[0]) || norm_operand(g, n->args[1])))
        adds.push_back(n);
    if (adds.empty()) return;
    const MetaTable& metas = cached_metas(g, ctx);
    for (Node* n : adds) fuse(g, metas, n);
  }

 private:
  static bool norm_operand(const Graph& g, const Value& v) {
    return v.is_node() && op_name(v.node) == "upcast_rms_norm" && g.users(v.node).size() == 1;
  }

  // The shape and dtype of n: the metas', or, for a step made by this pass (a residual's fused
  // step before it), its own meta.
  static bool shape_of(const MetaTable& metas, const Node* n, Shape* shape, DType* dtype) {
    if (const Tensor* t = metas.tensor(n)) {
      *shape = t->shape();
      *dtype = t->dtype();
      return true;
    }
    if (!n->meta.shape || !n->meta.dtype) return false;
    *shape = *n->meta.shape;
    *dtype = *n->meta.dtype;
    return true;
  }

  static void fuse(Graph& g, const MetaTable& metas, Node* add) {
    if (add->args.size() != 2 || !add->args[0].is_node() || !add->args[1].is_node()) return;
    for (const auto& [key, v] : add->kwargs)
      if (key != "alpha" || !is_number_one(v)) return;
    Shape ys, ns, rs;
    DType yt, nt, rt;
    if (!shape_of(metas, add, &ys, &yt)) return;
    for (int side : {1, 0}) {
      Node* norm = add->args[side].node;
      Node* r = add->args[1 - side].node;
      if (!norm_operand(g, add->args[side]) || !norm->kwargs.empty() || norm == r) continue;
      ResolvedCall rc = resolve_node(*norm);
      const size_t residual_at = nn::kUpcastNormResidualArg;
      if (rc.args.size() <= residual_at || !rc.args[residual_at].is_none()) continue;
      if (!shape_of(metas, norm, &ns, &nt) || !shape_of(metas, r, &rs, &rt) || rs != ns ||
          rt != nt || ys != ns || yt != nt)
        continue;
      std::vector<Value> args = rc.args;
      args[residual_at] = ref(r);
      Emitter e(g, add);
      Node* fused = e.call("inplace.upcast_rms_norm", std::move(args), {}, add->name + "_norm");
      fused->meta = add->meta;
      fused->meta.shape = ys;  // what the next add reads of it (shape_of)
      fused->meta.dtype = yt;
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
