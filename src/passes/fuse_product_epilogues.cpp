// fuse_product_epilogues (an engine pass, after fuse_pointwise): a fused_pointwise step whose one
// input is a fused product that nothing else reads, and whose result has the product's shape and
// dtype, becomes the product's epilogue program:
//   fused_pointwise([fused_addmm(x, W, b, ...)], program)  -> fused_addmm(x, W, b, ..., program)
//   fused_pointwise([fused_linear(x, W, b, ...)], program) -> fused_linear(..., program)
//   fused_pointwise([rms_norm_linear(x, ...)], program)    -> rms_norm_linear(..., program)
// GPT-2's GELU-tanh after c_fc (mul, pow, mul, add, mul, tanh, add, mul: one fused_pointwise
// step) then runs in the product's step, whether c_fc reads its Conv1D weight as stored
// (fused_addmm) or prepared (a linear: prepare_in_out_weights, then its LayerNorm joined by
// fuse_norm_prologues). Not after a rotary epilogue. Exact: the epilogue is the same program, run
// on the product's value as the chain stored it. A step the engine's backend would not run
// (options.kernel_supports) keeps its two steps.
#include "ops/fused_addmm_args.h"
#include "ops/fused_linear_args.h"
#include "ops/registry.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

// The epilogue's position in `product`'s arguments, or 0 when it cannot take one.
size_t epilogue_slot(const Node* product) {
  const std::string name = op_name(product);
  if (name == fused_addmm::kName) return fused_addmm::kEpilogue;
  if (name == fused_linear::kLinear) return fused_linear::kLinearEpilogue;
  if (name == fused_linear::kNormLinear && fused_linear::rotary_cols(product->args) == 0)
    return fused_linear::kNormEpilogue;
  return 0;
}

class FuseProductEpiloguesPass : public Pass {
 public:
  std::string name() const override { return "fuse_product_epilogues"; }
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
    const size_t slot = epilogue_slot(product);
    if (slot == 0 || fused_linear::has_items(product->args, slot) || g.users(product).size() != 1 ||
        !product->kwargs.empty())
      return;
    const Tensor* tp = metas.tensor(product);
    const Tensor* ts = metas.tensor(step);
    if (!tp || !ts || tp->shape() != ts->shape() || tp->dtype() != ts->dtype()) return;
    std::vector<Value> args = product->args;
    if (args.size() < slot) fill_defaults(product, &args, slot);
    args.resize(slot, Value::none());
    args.push_back(step->args[1]);
    const std::string op = op_name(product);
    if (!backend_runs(metas, op, args, options)) return;
    Node* fused = g.insert_before(step, NodeOp::kCallFunction, product->target, std::move(args), {},
                                  step->name + "_" + op);
    fused->meta = step->meta;
    if (const Value* m = metas.find(step)) metas.set(fused, *m);
    g.replace_all_uses_with(step, fused);
    g.erase_all({step, product});
  }

  // The schema's defaults of `product`'s arguments up to `slot` (a norm form's rotary and norm
  // arguments, the empty lists), so that the epilogue lands at its position.
  static void fill_defaults(const Node* product, std::vector<Value>* args, size_t slot) {
    const OpDef* def = Registry::get().find(op_name(product));
    if (!def) return;
    for (size_t i = args->size(); i < slot && i < def->schema.args.size(); ++i)
      args->push_back(def->schema.args[i].default_value.value_or(Value::none()));
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_product_epilogues_pass() {
  return std::make_unique<FuseProductEpiloguesPass>();
}

}  // namespace inplace
