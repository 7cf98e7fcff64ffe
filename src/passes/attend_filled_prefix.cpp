// attend_filled_prefix (an engine pass): attention over a whole static cache under a mask
// derived from the position, as Hugging Face writes a static-cache decoder,
//   k = kv_cache_update(k_cache, k_new, index=p + a); (v likewise)
//   mask = arange(s_max) + c <= p + b            (le / lt, either side, through views)
//          [& arange(s_max) + c > p - w]         (a sliding window: Gemma 3's, Mistral's layers)
//   o = scaled_dot_product_attention(q, k, v, mask)
// becomes attention over the filled prefix only, as the built-in model's graph spells it:
//   o = scaled_dot_product_attention(q, k[:, :, :p + b - c + 1], v[:, :, :p + b - c + 1])
// The prefix end is a runtime scalar (docs/engine.md), so the step reads pos+1 keys instead of
// s_max. Exact: keys past the end are the ones the mask sets to -inf, whose weight exp(-inf) is
// exactly 0, and the mask is all true on the prefix. The cache write at p + a (checked in range
// by kv_cache_update) proves the prefix is not empty: the rewrite needs b - c >= a. It also
// bounds p, which proves a window's lower bound true for every key when the window is at least
// the cache's length. A shorter window is attention's `window` (our keyword of
// scaled_dot_product_attention: the last `window` keys of those it is given, here
// b + w - c of the prefix), so a sliding layer reads at most its window, whatever s_max and the
// position. Anything else (another mask, several positions, dropout, is_causal; a window under
// rounded_attention, which has none) keeps the masked form.
#include <algorithm>

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

// What a bool mask's last dim says of key j, the same in every other position of the mask:
// j <= p + offset for each of `upper`, j >= p + offset for each of `lower` (a conjunction).
struct MaskBounds {
  std::vector<PositionValue> upper, lower;
};

// A bool tensor every element of which is true: new_ones / ones / full(.., True) of bool.
bool all_true(const MetaTable& metas, Node* m) {
  const Tensor* t = metas.tensor(m);
  if (!t || t->dtype() != DType::kBool || !m->is_call()) return false;
  ResolvedCall rc = resolve_node(*m);
  const std::string& name = rc.op->schema.name;
  if (name == "new_ones" || name == "ones") return true;
  const size_t fill_at = name == "full" ? 1 : name == "new_full" ? 2 : 0;
  if (fill_at == 0 || rc.args.size() <= fill_at) return false;
  const Value& fill = rc.args[fill_at];
  return (fill.kind == Value::Kind::kBool && fill.b) ||
         (fill.is_number() && fill.as_double("attend_filled_prefix") != 0);
}

// One comparison of a key index (arange(s) + c along the last dim) with a position p + o, in
// either order: the bound it puts on j.
bool comparison_bound(const Graph& g, const MetaTable& metas, const ResolvedCall& rc,
                      const std::string& name, int64_t s, MaskBounds* out) {
  const bool le = name == "le", lt = name == "lt", ge = name == "ge", gt = name == "gt";
  if (!(le || lt || ge || gt) || rc.args.size() < 2 || !rc.args[0].is_node() ||
      !rc.args[1].is_node())
    return false;
  for (int key_side : {0, 1}) {
    Node* key = rc.args[key_side].node;
    std::optional<int64_t> c = trace_key_index(g, metas, key);
    const Tensor* km = metas.tensor(key);
    if (!c || !km || km->size(-1) != s) continue;
    std::optional<PositionValue> p = trace_position(metas, rc.args[1 - key_side].node);
    if (!p) return false;
    p->offset -= *c;  // j + c (op) p  <=>  j (op) p - c
    // With the key on the right, `p op j` reads as `j op' p` (le <-> ge, lt <-> gt).
    const bool at_most = key_side == 0 ? (le || lt) : (ge || gt);
    const bool strict = lt || gt;
    if (at_most) {  // j <= p, or j < p: j <= p - 1
      p->offset -= strict ? 1 : 0;
      out->upper.push_back(*p);
    } else {  // j >= p, or j > p: j >= p + 1
      p->offset += strict ? 1 : 0;
      out->lower.push_back(*p);
    }
    return true;
  }
  return false;
}

// The bounds of a bool mask whose last dim has s elements: comparisons of the key index with a
// position, joined by `and`, through broadcasts and views that keep the last dim; all-true
// factors are dropped (Hugging Face's sliding-window mask ANDs `new_ones` in). False when any
// part is something else.
bool mask_bounds(const Graph& g, const MetaTable& metas, Node* m, int64_t s, MaskBounds* out,
                 int depth = 0) {
  for (; depth < 32; ++depth) {
    if (all_true(metas, m)) return true;
    const Tensor* t = metas.tensor(m);
    if (!t || t->dtype() != DType::kBool || t->dim() < 1 || t->size(-1) != s || !m->is_call())
      return false;
    ResolvedCall rc = resolve_node(*m);
    const std::string& name = rc.op->schema.name;
    if (rc.args.empty() || !rc.args[0].is_node()) return false;
    const Tensor* in = metas.tensor(rc.args[0].node);
    if (name == "expand" || name == "alias" || name == "clone") {  // never moves the last dim
      m = rc.args[0].node;
      continue;
    }
    if ((name == "to" || name == "_to_copy") && in && in->dtype() == DType::kBool) {
      m = rc.args[0].node;  // bool to bool: the same values
      continue;
    }
    if (name == "unsqueeze" && rc.args.size() >= 2 && rc.args[1].kind == Value::Kind::kInt && in) {
      const int64_t d = rc.args[1].i < 0 ? rc.args[1].i + t->dim() : rc.args[1].i;
      if (d == t->dim() - 1) return false;
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
    if (name == "__and__" || name == "bitwise_and" || name == "logical_and") {
      if (rc.args.size() < 2 || !rc.args[1].is_node()) return false;
      return mask_bounds(g, metas, rc.args[0].node, s, out, depth + 1) &&
             mask_bounds(g, metas, rc.args[1].node, s, out, depth + 1);
    }
    return comparison_bound(g, metas, rc, name, s, out);
  }
  return false;
}

// The mask's computation once attention no longer reads it: each call node nothing reads that
// writes nothing (not mutating), and in turn its operands, never a placeholder.
void erase_unread(Graph& g, Node* n) {
  std::vector<Node*> work = {n};
  while (!work.empty()) {
    Node* x = work.back();
    work.pop_back();
    if (!x->is_call() || !g.users(x).empty()) continue;
    try {
      if (resolve_node(*x).op->kind == OpKind::kMutating) continue;
    } catch (const Error&) {
      continue;  // an op the registry does not know: kept, as dead_code_elimination keeps it
    }
    std::vector<Node*> ins = x->inputs();
    g.erase(x);
    for (Node* in : ins)
      if (std::find(work.begin(), work.end(), in) == work.end()) work.push_back(in);
  }
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
    MaskBounds bounds;
    if (!written || !mask_bounds(g, metas, mask.node, s, &bounds) || bounds.upper.empty()) return;
    // The tightest upper bound: the prefix end.
    std::optional<PositionValue> keep;
    for (const PositionValue& u : bounds.upper) {
      if (!same_core(written->core, u.core)) return;
      if (!keep || u.offset < keep->offset) keep = u;
    }
    if (keep->offset < written->offset) return;
    // A lower bound j >= p + l holds for every key when p + l <= 0 on every call the engine
    // runs: the cache write at p + a is checked in range, so p <= s - 1 - a, and l <= a + 1 - s
    // suffices (Hugging Face's sliding-window layers: a cache of at most the window's slots).
    // A tighter lower bound is a sliding window over the prefix: keys [p + l, p + u], the last
    // u + 1 - l of the prefix [0, p + u]; scaled_dot_product_attention takes them as its window.
    int64_t window = 0;
    for (const PositionValue& l : bounds.lower) {
      if (!same_core(written->core, l.core)) return;
      if (l.offset <= written->offset + 1 - s) continue;
      const int64_t w = keep->offset + 1 - l.offset;
      if (w < 1 || op_name(n) != "scaled_dot_product_attention") return;
      window = window == 0 ? w : std::min(window, w);
    }
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
    std::vector<std::pair<std::string, Value>> kwargs = keyword_args(rc);
    if (window > 0) {
      for (auto& [name, v] : kwargs)
        if (name == "window") v = Value::integer(window);
    }
    Node* fused = e.call(n->target, std::move(args), std::move(kwargs), n->name + "_prefix");
    fused->meta = n->meta;
    g.replace_all_uses_with(n, fused);
    g.erase(n);
    erase_unread(g, mask.node);
  }
};

}  // namespace

std::unique_ptr<Pass> make_attend_filled_prefix_pass() {
  return std::make_unique<AttendFilledPrefixPass>();
}

}  // namespace inplace
