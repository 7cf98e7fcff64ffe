// merge_sibling_linears (an engine pass, where the backend prefers it: GPU compiles): fused_linear
// products of one input with bf16 weights at decode size become one product over the weights
// stacked along the output dim, each former result a slice of the merged one (a view):
//   q = fused_linear(x, wq); k = fused_linear(x, wk); v = fused_linear(x, wv)
//   -> qkv = fused_linear(x, cat([wq, wk, wv])); q = qkv[..., :nq]; k = ...; v = ...
// Attention's q/k/v projections are then one GEMV launch instead of three (on a GPU each launch
// costs a few microseconds at one token; the k and v GEMVs alone fill a quarter of the SMs).
// Exact: every output element is the same dot product, summed in the same order. The stacked
// weight is a new constant; the separate ones are dropped from the graph. Off for the cpu, where
// a product costs its bytes, not its launch, and where the caller's weights would otherwise be
// held twice.
#include "ops/fused_linear_args.h"
#include "ops/registry.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

class MergeSiblingLinearsPass : public Pass {
 public:
  std::string name() const override { return "merge_sibling_linears"; }
  void run(Graph& g, PassContext& ctx) override {
    if (!ctx.options.merge_sibling_linears) return;
    MetaTable& metas = cached_metas(g, ctx);
    // Products by input, in program order.
    std::map<const Node*, std::vector<Node*>> groups;
    std::vector<const Node*> inputs;
    for (Node* n : g.nodes()) {
      const Tensor* w = plain_product_weight(g, metas, n, ctx.options.decode_max_rows);
      if (!w) continue;
      const Node* x = n->args[0].node;
      if (!groups.count(x)) inputs.push_back(x);
      groups[x].push_back(n);
    }
    for (const Node* x : inputs) {
      std::vector<Node*>& members = groups[x];
      if (members.size() >= 2) merge(g, members);
    }
  }

 private:
  // The bf16 weight of fused_linear(x, w) without a bias or a residual, x of at most `rows` rows.
  static const Tensor* plain_product_weight(const Graph& g, const MetaTable& metas, const Node* n,
                                            int64_t rows) {
    using namespace fused_linear;
    if (op_name(n) != kLinear || !n->kwargs.empty() || n->args.size() < 2) return nullptr;
    if (has_arg(n->args, kBias) || has_arg(n->args, kResidual)) return nullptr;
    if (!n->args[0].is_node() || !n->args[1].is_node()) return nullptr;
    const Node* w = n->args[1].node;
    if (w->op != NodeOp::kGetAttr) return nullptr;
    auto c = g.constants.find(w->target);
    if (c == g.constants.end() || c->second.dtype() != DType::kBFloat16 || c->second.dim() != 2)
      return nullptr;
    const Tensor* x = metas.tensor(n->args[0].node);
    if (!x || x->dim() < 1 || x->size(-1) != c->second.size(1) || c->second.size(1) == 0 ||
        x->numel() / x->size(-1) > rows)
      return nullptr;
    return &c->second;
  }

  static void merge(Graph& g, const std::vector<Node*>& members) {
    std::vector<Tensor> weights;
    std::string name = "merged";
    for (const Node* m : members) {
      const std::string& target = m->args[1].node->target;
      weights.push_back(g.constants.at(target).contiguous());
      name += "." + target;
    }
    const int64_t k = weights[0].size(1);
    for (const Tensor& w : weights)
      if (w.size(1) != k) return;
    int64_t rows = 0;
    for (const Tensor& w : weights) rows += w.size(0);
    Tensor stacked = Tensor::empty({rows, k}, DType::kBFloat16);
    int64_t at = 0;
    for (const Tensor& w : weights) {
      stacked.slice(0, at, at + w.size(0)).copy_from(w);
      at += w.size(0);
    }
    while (g.constants.count(name)) name += "_";
    g.constants[name] = stacked;
    Node* first = members.front();
    Node* w_node = g.insert_before(first, NodeOp::kGetAttr, name, {}, {}, "merged_weight");
    Node* merged =
        g.insert_before(first, NodeOp::kCallFunction, "inplace.fused_linear",
                        {first->args[0], Value::node_ref(w_node)}, {}, first->name + "_merged");
    at = 0;
    std::vector<Node*> dead;
    for (size_t i = 0; i < members.size(); ++i) {
      Node* m = members[i];
      const int64_t n = weights[i].size(0);
      Node* slice = g.insert_before(first, NodeOp::kCallFunction, "aten.slice.Tensor",
                                    {Value::node_ref(merged), Value::integer(-1),
                                     Value::integer(at), Value::integer(at + n), Value::integer(1)},
                                    {}, m->name + "_part");
      slice->meta = m->meta;
      at += n;
      g.replace_all_uses_with(m, slice);
      dead.push_back(m);
    }
    std::vector<Node*> weight_nodes;
    for (Node* m : dead) weight_nodes.push_back(m->args[1].node);
    g.erase_all(dead);
    for (Node* w : weight_nodes) {
      if (!g.users(w).empty()) continue;
      const std::string target = w->target;
      g.erase(w);
      bool still_read = false;
      for (const Node* n : g.nodes())
        still_read |= n->op == NodeOp::kGetAttr && n->target == target;
      if (!still_read) g.constants.erase(target);
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_merge_sibling_linears_pass() {
  return std::make_unique<MergeSiblingLinearsPass>();
}

}  // namespace inplace
