// drop_identity_casts (an engine pass): a cast to the dtype its input already has,
//   x.to(torch.float32) with x float32 (Hugging Face's RMSNorm casts up and back; at float32
//   both are identities), and make_fx's _to_copy of the same dtype,
// is its input, so the fusions that follow match the chain around it. Only casts that change
// nothing (same dtype, no device, layout or memory-format argument beyond the defaults) and
// whose readers are calls are dropped: a program output keeps its own tensor. Exact.
#include "ops/registry.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

class DropIdentityCastsPass : public Pass {
 public:
  std::string name() const override { return "drop_identity_casts"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable& metas = cached_metas(g, ctx);
    for (Node* n : g.nodes()) {
      const std::string op = op_name(n);
      if (op != "to" && op != "_to_copy") continue;
      ResolvedCall rc = resolve_node(*n);
      if (rc.args.empty() || !rc.args[0].is_node()) continue;
      Node* x = rc.args[0].node;
      const Tensor* xm = metas.tensor(x);
      const Tensor* nm = metas.tensor(n);
      if (!xm || !nm || xm->dtype() != nm->dtype() || xm->shape() != nm->shape() ||
          !cast_only_to_dtype(rc, xm->dtype()))
        continue;
      bool calls_only = true;
      for (Node* u : g.users(n)) calls_only &= u->is_call();
      if (!calls_only) continue;
      g.replace_all_uses_with(n, x);
      g.erase(n);
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_drop_identity_casts_pass() {
  return std::make_unique<DropIdentityCastsPass>();
}

}  // namespace inplace
