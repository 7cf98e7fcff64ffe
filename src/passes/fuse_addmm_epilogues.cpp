// fuse_addmm_epilogues (an engine pass, after fuse_pointwise): a fused_pointwise step whose one
// input is a fused_addmm product that nothing else reads, and whose result has the product's
// shape and dtype, becomes the product's epilogue program:
//   fused_pointwise([fused_addmm(x, W, b, ...)], program) -> fused_addmm(x, W, b, ..., program)
// GPT-2's GELU-tanh after c_fc (mul, pow, mul, add, mul, tanh, add, mul: one fused_pointwise
// step) then runs in the product's step. Exact: the epilogue is the same program, run on the
// product's value as the chain stored it. A step the engine's backend would not run
// (options.kernel_supports) keeps its two steps.
#include "ops/fused_addmm_args.h"
#include "ops/registry.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

using namespace fused_addmm;

class FuseAddmmEpiloguesPass : public Pass {
 public:
  std::string name() const override { return "fuse_addmm_epilogues"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable& metas = cached_metas(g, ctx);
    std::vector<Node*> steps;
    for (Node* n : g.nodes())
      if (op_name(n) == "fused_pointwise") steps.push_back(n);
    for (Node* n : steps) fuse(g, metas, n, ctx.options);
  }

 private:
  static void fuse(Graph& g, MetaTable& metas, Node* step, const PassOptions& options) {
    if (step->args.size() != 2 || !step->kwargs.empty() || !step->args[0].is_sequence() ||
        step->args[0].items.size() != 1 || !step->args[0].items[0].is_node() ||
        !step->args[1].is_sequence())
      return;
    Node* product = step->args[0].items[0].node;
    if (op_name(product) != kName || has_epilogue(product->args) || g.users(product).size() != 1 ||
        !product->kwargs.empty())
      return;
    const Tensor* tp = metas.tensor(product);
    const Tensor* ts = metas.tensor(step);
    if (!tp || !ts || tp->shape() != ts->shape() || tp->dtype() != ts->dtype()) return;
    std::vector<Value> args = product->args;
    args.resize(kEpilogue, Value::none());
    args.push_back(step->args[1]);
    if (!backend_runs(metas, kName, args, options)) return;
    Node* fused = g.insert_before(step, NodeOp::kCallFunction, "inplace.fused_addmm",
                                  std::move(args), {}, step->name + "_addmm");
    fused->meta = step->meta;
    if (const Value* m = metas.find(step)) metas.set(fused, *m);
    g.replace_all_uses_with(step, fused);
    g.erase_all({step, product});
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_addmm_epilogues_pass() {
  return std::make_unique<FuseAddmmEpiloguesPass>();
}

}  // namespace inplace
