// fuse_norm_weight_offsets (an engine pass, after the norm fusions, before fuse_pointwise): a
// norm step whose float32 weight is Gemma's `1 + w.to(float32)` of the model's own weight,
//   upcast_rms_norm(x, add(to(w, float32), 1.0), eps, True)
//   rms_norm_rotary(x, add(to(w, float32), 1.0), eps, True, cos, sin[, add(to(w2, ..)), split])
// reads w and computes the 1 + w itself (weight_offset=1.0: the cast and the add in float32, as
// the chain's, bitwise), instead of a pointwise step that recomputes the weight on every call.
// Gemma 3's norms after attention and after the MLP, and its q and k norms, are such norms
// (its norms before a product already fold into the product's prologue, fuse_norm_prologues).
// Each weight's add and cast must be read by that norm only; every weight of a step takes the
// same form (one dtype), or the step is left as it is.
#include "ops/nn_args.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/norm_weight.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

class FuseNormWeightOffsetsPass : public Pass {
 public:
  std::string name() const override { return "fuse_norm_weight_offsets"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable& metas = cached_metas(g, ctx);
    std::vector<Node*> norms;
    for (Node* n : g.nodes()) {
      const std::string name = op_name(n);
      if (name == "upcast_rms_norm" || name == "rms_norm_rotary") norms.push_back(n);
    }
    for (Node* n : norms) fold(g, metas, n);
  }

 private:
  static void fold(Graph& g, const MetaTable& metas, Node* n) {
    const bool rotary = op_name(n) == "rms_norm_rotary";
    ResolvedCall rc = resolve_node(*n);
    const size_t offset_at = rotary ? nn::kNormRotaryOffsetArg : nn::kUpcastNormOffsetArg;
    const auto& a = rc.args;
    if (!n->kwargs.empty() || a.size() <= offset_at || !a[0].is_node() ||
        a[3].kind != Value::Kind::kBool || !a[3].b || !a[offset_at].is_number() ||
        a[offset_at].as_double("fuse_norm_weight_offsets") != 0)
      return;
    const Tensor* x = metas.tensor(a[0].node);
    if (!x) return;
    std::vector<size_t> weights{1};
    if (rotary && a[6].is_node()) weights.push_back(6);
    std::vector<Node*> dead;
    std::vector<Node*> sources;
    for (size_t i : weights) {
      if (!a[i].is_node()) return;
      Node* w = one_plus_weight_source(g, metas, a[i].node, x->size(-1), x->dtype(), &dead);
      if (!w) return;
      sources.push_back(w);
    }
    const Tensor* w0 = metas.tensor(sources[0]);
    for (Node* w : sources)
      if (metas.tensor(w)->dtype() != w0->dtype()) return;
    std::vector<Value> args = a;
    for (size_t k = 0; k < weights.size(); ++k) args[weights[k]] = ref(sources[k]);
    args[offset_at] = Value::floating(1.0);
    n->args = std::move(args);
    g.erase_all(dead);
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_norm_weight_offsets_pass() {
  return std::make_unique<FuseNormWeightOffsetsPass>();
}

}  // namespace inplace
