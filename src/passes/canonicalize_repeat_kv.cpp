// canonicalize_repeat_kv (an engine pass): Hugging Face's repeat_kv before attention,
//   k = reshape(expand(unsqueeze(k_kv, 2), [b, h_kv, r, s, d]), [b, h_kv * r, s, d])
//   (the unsqueeze as make_fx and torch.export write it, or k_kv[:, :, None] as torch.fx does)
//   (v likewise); o = scaled_dot_product_attention(q, k, v, ...)
// becomes scaled_dot_product_attention(q, k_kv, v_kv, ..., enable_gqa=True), the form the
// built-in model writes: no copy of the whole cache r times per call, and the cache stays a view
// that later rewrites (attend_filled_prefix) can slice. Exact: query head i reads kv head i / r in
// both forms (repeat_kv repeats each kv head r times in a row, as enable_gqa groups them).
#include "ops/registry.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

// n past the ops that leave its value as it is: clone, and a slice or expand to the same shape
// (make_fx writes `x[:, :, None, :, :]` as full slices around the unsqueeze).
Node* past_identities(const MetaTable& metas, Node* n) {
  for (;;) {
    const std::string op = op_name(n);
    if (n->args.empty() || !n->args[0].is_node()) return n;
    Node* in = n->args[0].node;
    const Tensor* a = metas.tensor(n);
    const Tensor* b = metas.tensor(in);
    const bool same = a && b && a->shape() == b->shape() && a->dtype() == b->dtype();
    const bool full_slice = op == "slice" && n->args.size() >= 4 &&
                            n->args[2].kind == Value::Kind::kInt && n->args[2].i == 0 &&
                            (n->args.size() < 5 || n->args[4].kind == Value::Kind::kInt) &&
                            (n->args.size() < 5 || n->args[4].i == 1);
    if (!same || !(op == "clone" || op == "alias" || op == "expand" || full_slice)) return n;
    n = in;
  }
}

// The input of `n` when n is x with a unit dim inserted: unsqueeze (make_fx, torch.export) or
// x[:, :, None] (torch.fx records the index as written). Where the dim goes is checked by the
// caller, from the shapes.
Node* unsqueezed(Node* n) {
  if (op_name(n) == "unsqueeze" && n->args.size() >= 2 && n->args[0].is_node())
    return n->args[0].node;
  return getitem_inserts_unit_dims_only(n) ? n->args[0].node : nullptr;
}

// The kv-head tensor k_kv and the repeat r when `x` is repeat_kv(k_kv, r) of a 4-D k_kv.
Node* repeated_kv(const MetaTable& metas, Node* x, int64_t* r) {
  const std::string rn = op_name(x);
  if ((rn != "reshape" && rn != "view" && rn != "_unsafe_view") || x->args.empty() ||
      !x->args[0].is_node())
    return nullptr;
  Node* ex = past_identities(metas, x->args[0].node);
  if (op_name(ex) != "expand" || ex->args.empty() || !ex->args[0].is_node()) return nullptr;
  Node* u = past_identities(metas, ex->args[0].node);
  Node* un = unsqueezed(u);
  if (!un) return nullptr;
  Node* kv = past_identities(metas, un);
  const Tensor* k = metas.tensor(kv);
  const Tensor* um = metas.tensor(u);
  const Tensor* e = metas.tensor(ex);
  const Tensor* o = metas.tensor(x);
  if (!k || !um || !e || !o || k->dim() != 4 || e->dim() != 5 || o->dim() != 4) return nullptr;
  const int64_t b = k->size(0), h = k->size(1), s = k->size(2), d = k->size(3);
  *r = e->size(2);
  // The unit dim sits at 2 (inserting a unit dim moves no element: the shape tells where).
  if (um->shape() != Shape{b, h, 1, s, d} || e->shape() != Shape{b, h, *r, s, d} ||
      o->shape() != Shape{b, h * *r, s, d})
    return nullptr;
  return kv;
}

class CanonicalizeRepeatKvPass : public Pass {
 public:
  std::string name() const override { return "canonicalize_repeat_kv"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable& metas = cached_metas(g, ctx);
    for (Node* n : g.nodes()) {
      if (!is_attention(n)) continue;
      ResolvedCall rc = resolve_node(*n);
      if (rc.op->schema.overload != "" || rc.args.size() < 8) continue;
      if (!rc.args[0].is_node() || !rc.args[1].is_node() || !rc.args[2].is_node()) continue;
      int64_t rk = 0, rv = 0;
      Node* k = repeated_kv(metas, rc.args[1].node, &rk);
      Node* v = repeated_kv(metas, rc.args[2].node, &rv);
      const Tensor* q = metas.tensor(rc.args[0].node);
      const Tensor* km = k ? metas.tensor(k) : nullptr;
      if (!k || !v || rk != rv || !q || q->dim() != 4 || q->size(1) != km->size(1) * rk) continue;
      // The positional arguments (those before scale, the first keyword-only one).
      std::vector<Value> args(rc.args.begin(), rc.args.begin() + rc.op->schema.index_of("scale"));
      args[1] = ref(k);
      args[2] = ref(v);
      std::vector<std::pair<std::string, Value>> kwargs = keyword_args(rc);
      for (auto& [key, value] : kwargs)
        if (key == "enable_gqa") value = Value::boolean(true);
      Node* gqa = g.insert_before(n, NodeOp::kCallFunction, n->target, std::move(args),
                                  std::move(kwargs), n->name + "_gqa");
      gqa->meta = n->meta;
      g.replace_all_uses_with(n, gqa);
      g.erase(n);
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_canonicalize_repeat_kv_pass() {
  return std::make_unique<CanonicalizeRepeatKvPass>();
}

}  // namespace inplace
