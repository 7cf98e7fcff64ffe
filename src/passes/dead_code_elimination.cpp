// dead_code_elimination: removes call and get_attr nodes whose values nobody reads and that
// write nothing. Mutating ops, ops the registry doesn't know, placeholders and the output
// node always stay.
#include <set>

#include "passes/op_info.h"
#include "passes/pass.h"

namespace inplace {

namespace {

// A view at a runtime position (x.select(0, pos), x[n]) checks its index when eager runs it,
// read or not: it stays, so the engine refuses the values eager refuses (it costs no kernel).
bool checks_a_runtime_index(const Node& n, const OpDef& op) {
  if (op.kind != OpKind::kView) return false;
  for (size_t i = 1; i < n.args.size(); ++i) {
    bool runtime = false;
    for_each_node(n.args[i], [&](Node*) { runtime = true; });
    if (runtime) return true;
  }
  return false;
}

bool removable(const Node& n) {
  if (n.op == NodeOp::kGetAttr) return true;
  if (!n.is_call()) return false;
  try {
    const OpDef* op = resolve_node(n).op;
    return op->kind != OpKind::kMutating && !checks_a_runtime_index(n, *op);
  } catch (const Error&) {
    return false;  // unknown: keep it
  }
}

class DeadCodeEliminationPass : public Pass {
 public:
  std::string name() const override { return "dead_code_elimination"; }
  void run(Graph& graph, PassContext& ctx) override {
    std::set<const Node*> live;
    std::vector<Node*> nodes = graph.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      Node* n = *it;
      if (!live.count(n) && removable(*n)) continue;
      live.insert(n);
      for (Node* in : n->inputs()) live.insert(in);
    }
    std::vector<Node*> dead;
    for (Node* n : nodes)
      if (!live.count(n)) dead.push_back(n);
    graph.erase_all(dead);
    (void)ctx;
  }
};

}  // namespace

std::unique_ptr<Pass> make_dead_code_elimination_pass() {
  return std::make_unique<DeadCodeEliminationPass>();
}

}  // namespace inplace
