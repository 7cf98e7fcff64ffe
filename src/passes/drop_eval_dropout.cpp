// drop_eval_dropout (an engine pass): dropout in inference (`train=False`, as every model in
// eval mode records it, or `p == 0`) is the identity, so its readers read its input instead and
// the node goes: no copy a call, and no kernel needed on any device (GPT-2's and Phi-3's
// exported graphs hold one per block). Exact. Runs after functionalization, where no op writes
// into a value, so reading the input instead of a copy of it changes nothing. A dropout the
// output returns stays (an output must not become an alias of an input it was a copy of).
#include "passes/engine_passes.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

bool is_identity_dropout(const Node& n) {
  static const char* const kNames[] = {"dropout",        "alpha_dropout", "feature_alpha_dropout",
                                       "dropout1d",      "dropout2d",     "dropout3d",
                                       "feature_dropout"};
  const std::string name = op_name(&n);
  bool known = false;
  for (const char* k : kNames) known |= name == k;
  if (!known) return false;
  ResolvedCall call = resolve_node(n);
  if (call.args.size() < 3 || !call.args[0].is_node() || n.args.empty() || !n.args[0].is_node())
    return false;
  const Value& p = call.args[1];
  const Value& train = call.args[2];
  bool zero_p =
      (p.kind == Value::Kind::kFloat && p.f == 0.0) || (p.kind == Value::Kind::kInt && p.i == 0);
  bool eval = train.kind == Value::Kind::kBool && !train.b;
  return eval || zero_p;
}

class DropEvalDropoutPass : public Pass {
 public:
  std::string name() const override { return "drop_eval_dropout"; }
  void run(Graph& g, PassContext& ctx) override {
    std::vector<Node*> dropped;
    for (Node* n : g.nodes()) {
      if (!n->is_call() || !is_identity_dropout(*n)) continue;
      bool returned = false;
      for (Node* u : g.users(n)) returned |= u->op == NodeOp::kOutput;
      if (returned) continue;
      g.replace_all_uses_with(n, n->args[0].node);
      dropped.push_back(n);
    }
    g.erase_all(dropped);
    (void)ctx;
  }
};

}  // namespace

std::unique_ptr<Pass> make_drop_eval_dropout_pass() {
  return std::make_unique<DropEvalDropoutPass>();
}

}  // namespace inplace
