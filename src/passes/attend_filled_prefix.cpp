// attend_filled_prefix (an engine pass): attention over a whole static cache under a mask
// derived from the position, as Hugging Face writes a static-cache decoder,
//   k = kv_cache_update(k_cache, k_new, index=p + a); (v likewise)
//   mask = arange(s_max) + c <= p + b            (le / lt, either side, through views)
//   o = scaled_dot_product_attention(q, k, v, mask)
// becomes attention over the filled prefix only, as the built-in model's graph spells it:
//   o = scaled_dot_product_attention(q, k[:, :, :p + b - c + 1], v[:, :, :p + b - c + 1])
// The prefix end is a runtime scalar (docs/engine.md), so the step reads pos+1 keys instead of
// s_max. Exact: keys past the end are the ones the mask sets to -inf, whose weight exp(-inf) is
// exactly 0, and the mask is all true on the prefix. The cache write at p + a (checked in range
// by kv_cache_update) proves the prefix is not empty: the rewrite needs b - c >= a. Anything
// else (another mask, several positions, dropout, is_causal) keeps the masked form.
#include "ops/registry.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"
#include "passes/position_trace.h"

namespace inplace {

namespace {

const Value& arg_of(const ResolvedCall& rc, const char* name) {
  static const Value kNone;
  int i = rc.op->schema.index_of(name);
  return i < 0 || static_cast<size_t>(i) >= rc.args.size() ? kNone : rc.args[i];
}

// The bool mask's last dim is [j <= p + keep] for j along it, the same in every other position:
// returns keep's position part (p) and constant, or nothing.
std::optional<PositionValue> prefix_mask(const Graph& g, const MetaTable& metas, Node* m,
                                         int64_t s) {
  for (int depth = 0; depth < 16; ++depth) {
    const Tensor* t = metas.tensor(m);
    if (!t || t->dtype() != DType::kBool || t->dim() < 1 || t->size(-1) != s || !m->is_call())
      return std::nullopt;
    ResolvedCall rc = resolve_node(*m);
    const std::string& name = rc.op->schema.name;
    if (rc.args.size() < 2 || !rc.args[0].is_node()) return std::nullopt;
    const Tensor* in = metas.tensor(rc.args[0].node);
    if (name == "expand" || name == "alias") {  // broadcasts, never moves the last dim
      m = rc.args[0].node;
      continue;
    }
    if (name == "unsqueeze" && rc.args[1].kind == Value::Kind::kInt && in) {
      const int64_t d = rc.args[1].i < 0 ? rc.args[1].i + t->dim() : rc.args[1].i;
      if (d == t->dim() - 1) return std::nullopt;
      m = rc.args[0].node;
      continue;
    }
    if (getitem_inserts_unit_dims_only(m)) {  // m[None, None]: unit dims, no element moved
      m = rc.args[0].node;
      continue;
    }
    if ((name == "view" || name == "reshape") && in && in->numel() == s) {
      m = rc.args[0].node;
      continue;
    }
    bool lower = name == "le" || name == "lt";  // key on the left
    bool upper = name == "ge" || name == "gt";  // key on the right
    if (!(lower || upper) || !rc.args[1].is_node()) return std::nullopt;
    Node* key = rc.args[lower ? 0 : 1].node;
    Node* pos = rc.args[lower ? 1 : 0].node;
    std::optional<int64_t> c = trace_key_index(g, metas, key);
    std::optional<PositionValue> p = trace_position(metas, pos);
    const Tensor* km = metas.tensor(key);
    if (!c || !p || !km || km->size(-1) != s) return std::nullopt;
    // j + c <= p  <=>  j <= p - c;  j + c < p  <=>  j <= p - c - 1.
    p->offset -= *c + (name == "lt" || name == "gt" ? 1 : 0);
    return p;
  }
  return std::nullopt;
}

class AttendFilledPrefixPass : public Pass {
 public:
  std::string name() const override { return "attend_filled_prefix"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable& metas = cached_metas(g, ctx);
    for (Node* n : g.nodes())
      if (is_attention(n)) rewrite(g, metas, n);
  }

 private:
  static void rewrite(Graph& g, const MetaTable& metas, Node* n) {
    ResolvedCall rc = resolve_node(*n);
    if (rc.op->schema.overload != "" || rc.args.size() < 8) return;
    const Value& mask = arg_of(rc, "attn_mask");
    const Value& dropout = arg_of(rc, "dropout_p");
    const Value& causal = arg_of(rc, "is_causal");
    if (!rc.args[1].is_node() || !rc.args[2].is_node() || !mask.is_node()) return;
    if (!(dropout.is_none() || (dropout.is_number() && dropout.as_double("sdpa") == 0.0))) return;
    if (causal.kind == Value::Kind::kBool && causal.b) return;
    Node* k = rc.args[1].node;
    Node* v = rc.args[2].node;
    const Tensor* km = metas.tensor(k);
    const Tensor* vm = metas.tensor(v);
    if (!km || !vm || km->dim() != 4 || vm->dim() != 4 || km->size(2) != vm->size(2)) return;
    const int64_t s = km->size(2);
    // The key cache is written at one position this call: p + a, checked in range.
    if (op_name(k) != "kv_cache_update" || k->args.size() < 4 || !k->args[3].is_node() ||
        !(k->args[2].is_none()))
      return;
    std::optional<PositionValue> written = trace_position(metas, k->args[3].node);
    std::optional<PositionValue> keep = prefix_mask(g, metas, mask.node, s);
    if (!written || !keep || !same_core(written->core, keep->core) ||
        keep->offset < written->offset)
      return;
    Emitter e(g, n);
    Node* end = e.call("aten.add.Tensor", {ref(keep->core), Value::integer(keep->offset + 1)}, {},
                       n->name + "_prefix_end");
    // cache[:, :, :end], as the built-in model's graph spells it (meta inference keeps the
    // last dim of such a prefix, so the fusions after attention still see their shapes).
    auto prefix = [&](Node* cache, const char* what) {
      Value all = Value::slice(Value::none(), Value::none(), Value::none());
      Value index = Value::tuple({all, all, Value::slice(Value::none(), ref(end), Value::none())});
      return e.call("_operator.getitem", {ref(cache), index}, {}, n->name + what);
    };
    Node* kp = prefix(k, "_key_prefix");
    Node* vp = prefix(v, "_value_prefix");
    std::vector<Value> args = {
        ref(rc.args[0].node), ref(kp), ref(vp), Value::none(), Value::floating(0.0),
        Value::boolean(false)};
    Node* fused = e.call(n->target, std::move(args), keyword_args(rc), n->name + "_prefix");
    fused->meta = n->meta;
    g.replace_all_uses_with(n, fused);
    g.erase(n);
  }
};

}  // namespace

std::unique_ptr<Pass> make_attend_filled_prefix_pass() {
  return std::make_unique<AttendFilledPrefixPass>();
}

}  // namespace inplace
