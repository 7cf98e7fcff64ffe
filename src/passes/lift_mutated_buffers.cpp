// lift_mutated_buffers (an engine pass): a buffer (get_attr target) the program mutates becomes
// an input binding, so the engine can write its new value in place like any mutated input.
// Every get_attr of the target (a buffer read or written twice) maps onto one placeholder.
#include <cctype>

#include "passes/engine_passes.h"

namespace inplace {

namespace {

std::string binding_name(const std::string& target) {
  std::string s;
  for (char c : target) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s.empty() ? "buffer" : s;
}

class LiftMutatedBuffersPass : public Pass {
 public:
  std::string name() const override { return "lift_mutated_buffers"; }
  void run(Graph& g, PassContext& ctx) override {
    for (size_t i = static_cast<size_t>(ctx.num_placeholders); i < ctx.input_names.size(); ++i) {
      const std::string& target = ctx.input_names[i];
      IP_CHECK(g.constants.count(target), kNotFound, "[lift_mutated_buffers] buffer '", target,
               "' has no initial value in the graph's constants");
      // Lifted inputs follow every existing placeholder: input index i is the i-th placeholder.
      // Placeholders read nothing, so hoisting them all to the front keeps the program valid.
      std::vector<Node*> nodes = g.nodes();
      Node* first_other = nullptr;
      for (Node* n : nodes)
        if (n->op != NodeOp::kPlaceholder) {
          first_other = n;
          break;
        }
      for (Node* n : nodes)
        if (n->op == NodeOp::kPlaceholder && first_other) g.move_before(n, first_other);
      Node* ph = g.insert_before(first_other, NodeOp::kPlaceholder, binding_name(target), {}, {},
                                 binding_name(target));
      ph->meta.attrs["lifted_buffer"] = target;
      const Tensor& init = g.constants.at(target);
      ph->meta.shape = init.shape();
      ph->meta.dtype = init.dtype();
      for (Node* n : g.nodes()) {
        if (n->op != NodeOp::kGetAttr || n->target != target) continue;
        g.replace_all_uses_with(n, ph);
        g.erase(n);
      }
      // The binding keeps the module's own dotted name (`layers.0.k_cache`) unless another
      // node already holds it, so state maps back to the module by name.
      if (!g.find(target)) {
        g.rename(ph, target);
        ph->target = target;
      }
    }
  }
};
}  // namespace

std::unique_ptr<Pass> make_lift_mutated_buffers_pass() {
  return std::make_unique<LiftMutatedBuffersPass>();
}

}  // namespace inplace
