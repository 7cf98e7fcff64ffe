// dead_code_elimination: removes call and get_attr nodes whose values nobody reads and that
// write nothing. Mutating ops, ops the registry doesn't know, placeholders and the output
// node always stay.
#include <set>

#include "passes/op_info.h"
#include "passes/pass.h"

namespace inplace {

namespace {

bool removable(const Node& n) {
  if (n.op == NodeOp::kGetAttr) return true;
  if (!n.is_call()) return false;
  try {
    return resolve_node(n).op->kind != OpKind::kMutating;
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
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it)
      if (!live.count(*it)) graph.erase(*it);
    (void)ctx;
  }
};

}  // namespace

std::unique_ptr<Pass> make_dead_code_elimination_pass() {
  return std::make_unique<DeadCodeEliminationPass>();
}

}  // namespace inplace
