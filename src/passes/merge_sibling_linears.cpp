// merge_sibling_linears (an engine pass, where the backend prefers it: GPU compiles): fused_linear
// products of one input with bf16 weights (or fp16 weights and input) at decode size become one
// product over all their weights, each former result a slice of the merged one (a view):
//   q = fused_linear(x, wq); k = fused_linear(x, wk); v = fused_linear(x, wv)
//   -> qkv = fused_linear(x, cat([wq, wk, wv])); q = qkv[..., :nq]; k = ...; v = ...
// Attention's q/k/v projections are then one GEMV launch instead of three (on a GPU each launch
// costs a few microseconds at one token; the k and v GEMVs alone fill a quarter of the SMs).
// Exact: every output element is the same dot product, summed in the same order. Weights that
// are constants are stacked into a new constant (the separate ones are dropped from the graph);
// weights that are graph inputs (an exported model's parameters, the caller's memory, which is
// never copied) stay where they are: the merged product reads them as one grouped product,
// fused_linear(x, wq, None, None, [wk, wv]) (at most fused_linear::kMaxWeights a product). Such
// products with biases that are graph inputs too (Qwen2's q, k and v) group likewise, each
// weight with its own bias, never concatenated: fused_linear(x, wq, bq, None, [wk, wv],
// [bk, bv]); products with and without biases do not group together. The input may be float32
// or of the weights' dtype (a model exported in bf16 or fp16). Off for the cpu, where a product
// costs its bytes, not its launch, and where the caller's weights would otherwise be held twice.
#include <algorithm>
#include <tuple>

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
    // Products by input, by whether their weights are constants and by whether they have a
    // bias, in program order.
    using Key = std::tuple<const Node*, bool, bool>;
    std::map<Key, std::vector<Node*>> groups;
    std::vector<Key> keys;
    for (Node* n : g.nodes()) {
      bool constant = false;
      if (!plain_product_weight(g, metas, n, ctx.options.decode_max_rows, &constant)) continue;
      const bool bias = fused_linear::has_arg(n->args, fused_linear::kBias);
      if (constant && bias) continue;  // stacking constants takes products without a bias only
      const Key key{n->args[0].node, constant, bias};
      if (!groups.count(key)) keys.push_back(key);
      groups[key].push_back(n);
    }
    for (const Key& key : keys) {
      const std::vector<Node*>& members = groups[key];
      if (std::get<1>(key)) {
        if (members.size() >= 2) merge(g, members);
        continue;
      }
      // Weights the graph reads from its inputs: grouped products of at most kMaxWeights.
      for (size_t at = 0; at + 1 < members.size(); at += fused_linear::kMaxWeights) {
        const size_t end = std::min(members.size(), at + fused_linear::kMaxWeights);
        if (end - at >= 2) group(g, metas, {members.begin() + at, members.begin() + end});
      }
    }
  }

 private:
  // The weight of fused_linear(x, w, b) without a residual or more weights, x of at most `rows`
  // rows: bf16 with x float32 or bf16, or fp16 with x fp16; w a constant (*constant set) or a
  // graph input; b None or a graph input (its shape the op's rule checks).
  static const Tensor* plain_product_weight(const Graph& g, const MetaTable& metas, const Node* n,
                                            int64_t rows, bool* constant) {
    using namespace fused_linear;
    if (op_name(n) != kLinear || !n->kwargs.empty() || n->args.size() < 2) return nullptr;
    if (has_arg(n->args, kResidual) || has_items(n->args, kMoreWeights) ||
        has_items(n->args, kMoreBiases))
      return nullptr;
    if (has_arg(n->args, kBias) &&
        (!n->args[kBias].is_node() || n->args[kBias].node->op != NodeOp::kPlaceholder))
      return nullptr;
    if (!n->args[0].is_node() || !n->args[1].is_node()) return nullptr;
    const Node* w = n->args[1].node;
    const Tensor* weight = nullptr;
    if (w->op == NodeOp::kGetAttr) {
      auto c = g.constants.find(w->target);
      if (c != g.constants.end()) weight = &c->second;
      *constant = true;
    } else if (w->op == NodeOp::kPlaceholder) {
      weight = metas.tensor(w);
      *constant = false;
    }
    const Tensor* x = metas.tensor(n->args[0].node);
    if (!weight || !x || weight->dim() != 2 || x->dim() < 1 || x->size(-1) != weight->size(1) ||
        weight->size(1) == 0 || x->numel() / x->size(-1) > rows)
      return nullptr;
    // A float32 input and bf16 weights, or an input and weights of one half dtype.
    const bool half = x->dtype() == weight->dtype() && x->dtype() == DType::kFloat16;
    if (!half && (weight->dtype() != DType::kBFloat16 ||
                  (x->dtype() != DType::kFloat32 && x->dtype() != DType::kBFloat16)))
      return nullptr;
    return weight;
  }

  // Each member's result as a slice of `merged`'s columns, in order (n[i] columns each); the
  // members leave the graph.
  static void slice_members(Graph& g, Node* merged, const std::vector<Node*>& members,
                            const std::vector<int64_t>& n) {
    int64_t at = 0;
    for (size_t i = 0; i < members.size(); ++i) {
      Node* m = members[i];
      Node* slice =
          g.insert_before(members.front(), NodeOp::kCallFunction, "aten.slice.Tensor",
                          {Value::node_ref(merged), Value::integer(-1), Value::integer(at),
                           Value::integer(at + n[i]), Value::integer(1)},
                          {}, m->name + "_part");
      slice->meta = m->meta;
      at += n[i];
      g.replace_all_uses_with(m, slice);
    }
    g.erase_all(members);
  }

  // Products whose weights (and biases) are graph inputs: one grouped product over them, in
  // place, each weight with its own bias.
  static void group(Graph& g, const MetaTable& metas, const std::vector<Node*>& members) {
    using namespace fused_linear;
    std::vector<int64_t> n;
    std::vector<Value> more, more_biases;
    for (const Node* m : members) {
      const Tensor* w = metas.tensor(m->args[1].node);
      if (w->size(1) != metas.tensor(members[0]->args[1].node)->size(1)) return;
      n.push_back(w->size(0));
      if (m == members.front()) continue;
      more.push_back(m->args[1]);
      if (has_arg(m->args, kBias)) more_biases.push_back(m->args[kBias]);
    }
    Node* first = members.front();
    std::vector<Value> args{first->args[0], first->args[1], Value::none(), Value::none(),
                            Value::list(more)};
    if (has_arg(first->args, kBias)) {
      args[kBias] = first->args[kBias];
      args.push_back(Value::list(more_biases));
    }
    Node* merged = g.insert_before(first, NodeOp::kCallFunction, "inplace.fused_linear",
                                   std::move(args), {}, first->name + "_merged");
    slice_members(g, merged, members, n);
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
    Tensor stacked = Tensor::empty({rows, k}, weights[0].dtype());
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
    std::vector<int64_t> n;
    std::vector<Node*> weight_nodes;
    for (size_t i = 0; i < members.size(); ++i) {
      n.push_back(weights[i].size(0));
      weight_nodes.push_back(members[i]->args[1].node);
    }
    slice_members(g, merged, members, n);
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
