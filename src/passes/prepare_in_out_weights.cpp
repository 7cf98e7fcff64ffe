// prepare_in_out_weights (an engine pass, where the backend prefers prepared weights): a product
// at decode size over a weight stored [in, out] (GPT-2's Conv1D: `addmm(b, x, W)`, or `mm(x, W)`)
// whose weight the program only reads becomes a product over the weight's [out, in] copy, the
// layout the decode GEMV streams row by row (and the linear fusions reach):
//   addmm(b, x, W) -> linear(x, clone(t(W)), b)        mm(x, W) -> linear(x, clone(t(W)))
//   view(addmm(b, view(x, [-1, k]), W), [..., n]) -> linear(x, clone(t(W)), b)
// (the last is GPT-2's Conv1D: linear takes x as it lies, so the residual add after it joins the
// product as it joins a linear layer's)
// The copy is made once, not per call: a constant W (the engine's own weight) is transposed here,
// at compile time, into a new constant; a W the caller binds (a parameter or read-only buffer of
// a torch.export signature) is a prepared input, made by the engine each time that binding is
// bound (compile() hoists `clone(t(state))` out of the steps; backend/plan.h, PreparedInput).
// A weight that feeds several products is copied once. Only addmm's beta and alpha 1, operands of
// one float dtype, x with at most options.decode_max_rows rows; a prompt keeps its product.
// linear(x, Wt, b) sums the same products as addmm(b, x, W), in its own kernel's order: the
// engine agrees with the eager interpreter within the products' tolerance, not bit for bit.
#include <map>

#include "ir/export_signature.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

bool float_dtype(DType d) {
  return d == DType::kFloat32 || d == DType::kBFloat16 || d == DType::kFloat16;
}

class PrepareInOutWeightsPass : public Pass {
 public:
  std::string name() const override { return "prepare_in_out_weights"; }
  void run(Graph& g, PassContext& ctx) override {
    if (!ctx.options.prepare_weights) return;
    MetaTable& metas = cached_metas(g, ctx);
    std::vector<Node*> products;
    for (Node* n : g.nodes())
      if (op_name(n) == "addmm" || op_name(n) == "mm") products.push_back(n);
    std::map<const Node*, Node*> prepared;  // W -> its [out, in] copy
    for (Node* n : products) {
      const bool addmm = op_name(n) == "addmm";
      if (n->args.size() != (addmm ? 3u : 2u)) continue;
      bool plain = true;
      for (const auto& [key, v] : n->kwargs)
        plain &= (key == "beta" || key == "alpha") && is_number_one(v);
      if (!plain) continue;
      const size_t xi = addmm ? 1 : 0;
      if (!n->args[xi].is_node() || !n->args[xi + 1].is_node()) continue;
      if (addmm && !n->args[0].is_node()) continue;
      Node* x = n->args[xi].node;
      Node* w = n->args[xi + 1].node;
      const Tensor* xm = metas.tensor(x);
      const Tensor* wm = metas.tensor(w);
      const Tensor* ym = metas.tensor(n);
      if (!xm || !wm || !ym || xm->dim() != 2 || wm->dim() != 2 || !float_dtype(wm->dtype()) ||
          xm->dtype() != wm->dtype() || ym->dtype() != wm->dtype() ||
          xm->size(0) > ctx.options.decode_max_rows)
        continue;
      if (addmm) {
        const Tensor* bm = metas.tensor(n->args[0].node);
        if (!bm || bm->dim() != 1 || bm->dtype() != wm->dtype()) continue;
      }
      if (!read_only_weight(g, ctx, w)) continue;
      Node*& wt = prepared[w];
      if (wt == nullptr) wt = transposed(g, w, n);
      // GPT-2 views its rows as a matrix for addmm and the product back: linear takes x as it
      // is, so the product's readers (the residual add) see it as they would a linear layer's.
      Node* result = n;
      Node* rows = nullptr;  // the view of x as a matrix, when linear reads x itself
      if (Node* back = viewed_back(g, metas, n, x, ym)) {
        rows = x;
        x = x->args[0].node;
        result = back;
      }
      std::vector<Value> args = {Value::node_ref(x), Value::node_ref(wt)};
      if (addmm) args.push_back(n->args[0]);
      Node* linear = g.insert_before(n, NodeOp::kCallFunction, "aten.linear.default",
                                     std::move(args), {}, n->name + "_rows");
      linear->meta = result->meta;
      g.replace_all_uses_with(result, linear);
      if (result != n) g.erase(result);
      g.erase(n);
      if (rows && g.users(rows).empty()) g.erase(rows);
      // A constant read only here is the engine's no more: its [out, in] copy replaces it.
      if (w->op == NodeOp::kGetAttr && g.users(w).empty()) {
        prepared.erase(w);
        g.erase(w);
      }
    }
  }

 private:
  // The view of `mm`'s product back to the leading dims of the tensor `rows` views as a matrix
  // (`view(addmm(b, view(x, [-1, k]), W), [..., n])`), its only reader; null when not so.
  static Node* viewed_back(Graph& g, MetaTable& metas, Node* mm, Node* rows, const Tensor* y) {
    if (!is_view_or_reshape(rows)) return nullptr;
    const Tensor* src = metas.tensor(rows->args[0].node);
    const Tensor* v = metas.tensor(rows);
    if (!src || !v || src->dim() < 1 || src->size(-1) != v->size(1) || src->numel() != v->numel())
      return nullptr;
    const std::vector<Node*> users = g.users(mm);
    if (users.size() != 1 || !is_view_or_reshape(users[0])) return nullptr;
    const Tensor* back = metas.tensor(users[0]);
    Shape want = src->shape();
    want.back() = y->size(1);
    return back && back->shape() == want ? users[0] : nullptr;
  }

  // A constant, or a placeholder the signature binds to state that no output writes.
  static bool read_only_weight(const Graph& g, const PassContext& ctx, const Node* w) {
    if (w->op == NodeOp::kGetAttr) {
      auto c = g.constants.find(w->target);
      if (c == g.constants.end() || !c->second.defined() || c->second.is_meta()) return false;
    } else if (w->op != NodeOp::kPlaceholder || !is_lifted_placeholder(g, w->name)) {
      return false;
    }
    const std::string& input = w->op == NodeOp::kGetAttr ? w->target : w->name;
    for (const Mutation& m : ctx.mutations)
      if (m.input >= 0 && m.input < static_cast<int>(ctx.input_names.size()) &&
          ctx.input_names[m.input] == input)
        return false;
    return true;
  }

  // W's [out, in] copy: a new constant for a constant, else clone(t(W)) before `before`.
  static Node* transposed(Graph& g, Node* w, Node* before) {
    if (w->op == NodeOp::kGetAttr) {
      std::string target = w->target + ".rows";
      while (g.constants.count(target)) target += "_";
      g.constants[target] = g.constants.at(w->target).t().clone();
      return g.insert_before(before, NodeOp::kGetAttr, target, {}, {}, w->name + "_rows");
    }
    Node* t = g.insert_before(before, NodeOp::kCallFunction, "aten.t.default", {Value::node_ref(w)},
                              {}, w->name + "_t");
    return g.insert_before(before, NodeOp::kCallFunction, "aten.clone.default",
                           {Value::node_ref(t)}, {}, w->name + "_rows");
  }
};

}  // namespace

std::unique_ptr<Pass> make_prepare_in_out_weights_pass() {
  return std::make_unique<PrepareInOutWeightsPass>();
}

}  // namespace inplace
