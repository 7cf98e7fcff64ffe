// fuse_rotary (an engine pass): Hugging Face's apply_rotary_pos_emb,
//   x * cos + cat(-x[..., d/2:], x[..., :d/2], -1) * sin
// (the halves as getitem or, as torch.export records them, aten.slice of the last dim)
// becomes one rotary_embedding(x, cos, sin) step instead of five (neg, cat, two muls, add),
// none of their temporaries written. Chains whose intermediates nothing else reads are fused at
// float32, bfloat16 and float16 (x, cos and sin of one dtype, as Hugging Face casts cos and sin
// to x's dtype); the kernel does the chain's float operations in its order and rounds where the
// chain's ops round (each product and the sum, to the dtype): bit-identical. Phi-3's partial
// rotary (x[..., :rd] rotated, x[..., rd:] passed through by a cat) fuses the rotated slice; the
// cat stays, unless the tail is empty (rd == d, Phi-3's default): then the cat, a copy, goes.
#include "ops/registry.h"
#include "ops/rotary_args.h"
#include "passes/dtype_of.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

Node* sole(const Graph& g, const Value& v, const char* name) {
  if (!v.is_node() || op_name(v.node) != name || g.users(v.node).size() != 1) return nullptr;
  return v.node;
}

bool int_is(const Value& v, int64_t want) {
  return v.kind == Value::Kind::kInt && v.i == want;
}

bool slice_bound(const Value& v, int64_t* out) {
  if (v.is_none()) {
    *out = -1;
    return true;
  }
  if (v.kind != Value::Kind::kInt || v.i < 0) return false;
  *out = v.i;
  return true;
}

// x[..., a:b] with a step of 1, as getitem or as aten.slice along the last dim (`last` is x's
// last dim when known, else -1); start/stop as ints (-1 for None).
bool last_dim_slice(const Node* n, const Node* x, int64_t last, int64_t* start, int64_t* stop) {
  if (n->args.empty() || !n->args[0].is_node() || n->args[0].node != x) return false;
  if (op_name(n) == "slice") {
    if (n->args.size() < 4 || n->args[1].kind != Value::Kind::kInt) return false;
    if (!(n->args[1].i == -1 || (last >= 0 && n->args[1].i == last))) return false;
    if (n->args.size() > 4 && !(n->args[4].is_none() || int_is(n->args[4], 1))) return false;
    return slice_bound(n->args[2], start) && slice_bound(n->args[3], stop);
  }
  if (op_name(n) != "getitem" || n->args.size() != 2) return false;
  const Value& idx = n->args[1];
  if (!idx.is_sequence() || idx.items.size() != 2 || idx.items[0].kind != Value::Kind::kEllipsis)
    return false;
  const Value& s = idx.items[1];
  if (s.kind != Value::Kind::kSlice || s.items.size() != 3) return false;
  if (!(s.items[2].is_none() || int_is(s.items[2], 1))) return false;
  return slice_bound(s.items[0], start) && slice_bound(s.items[1], stop);
}

class FuseRotaryPass : public Pass {
 public:
  std::string name() const override { return "fuse_rotary"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable& metas = cached_metas(g, ctx);
    DtypeOf dtypes(metas);
    std::vector<Node*> adds;
    for (Node* n : g.nodes())
      if (op_name(n) == "add") adds.push_back(n);
    for (Node* y : adds) {
      if (y->args.size() < 2) continue;
      bool alpha_one = y->args.size() < 3 || int_is(y->args[2], 1);
      for (const auto& [k, v] : y->kwargs) alpha_one &= k != "alpha" || int_is(v, 1);
      Node* a = sole(g, y->args[0], "mul");
      Node* b = sole(g, y->args[1], "mul");
      if (!alpha_one || !a || !b || a->args.size() < 2 || b->args.size() < 2) continue;
      if (!a->args[0].is_node() || !a->args[1].is_node() || !b->args[1].is_node()) continue;
      Node* x = a->args[0].node;
      Node* cos = a->args[1].node;
      Node* sin = b->args[1].node;
      Node* rot = sole(g, b->args[0], "cat");
      if (!rot || rot->args.size() < 2 || !int_is(rot->args[1], -1) ||
          !rot->args[0].is_sequence() || rot->args[0].items.size() != 2)
        continue;
      Node* neg = sole(g, rot->args[0].items[0], "neg");
      const Value& first = rot->args[0].items[1];
      if (!neg || neg->args.empty() || !neg->args[0].is_node() || !first.is_node()) continue;
      Node* x2 = neg->args[0].node;  // x[..., h:]
      Node* x1 = first.node;         // x[..., :h]
      // h is half the last dim of cos (static: the rotary tables are indexed by the positions);
      // x's shape may be per call after a runtime-extent slice, its last dim is not.
      const Tensor* cm = metas.tensor(cos);
      const Tensor* sm = metas.tensor(sin);
      const Tensor* xm = metas.tensor(x);
      const int64_t last = xm ? xm->dim() - 1 : -1;
      int64_t s1, e1, s2, e2;
      if (g.users(x2).size() != 1 || g.users(x1).size() != 1 ||
          !last_dim_slice(x1, x, last, &s1, &e1) || !last_dim_slice(x2, x, last, &s2, &e2))
        continue;
      if (!cm || !sm || cm->dim() < 1 || cm->size(-1) % 2 != 0 || sm->dim() < 1 ||
          sm->size(-1) != cm->size(-1) || (xm && (xm->dim() < 1 || xm->size(-1) != cm->size(-1))))
        continue;
      const int64_t h = cm->size(-1) / 2;
      if (!((s1 == -1 || s1 == 0) && e1 == h && s2 == h && (e2 == -1 || e2 >= 2 * h))) continue;
      // One dtype for all three, so every op of the chain computes and rounds at it (a float32
      // cos with a bfloat16 x would promote the products to float32: another chain).
      const std::optional<DType> t = dtypes.of(x);
      if (!t || !rotary::takes_dtype(*t) || dtypes.of(cos) != t || dtypes.of(sin) != t) continue;
      Node* fused =
          g.insert_before(y, NodeOp::kCallFunction, "inplace.rotary_embedding",
                          {Value::node_ref(x), Value::node_ref(cos), Value::node_ref(sin)}, {},
                          y->name + "_rotary");
      fused->meta = y->meta;
      g.replace_all_uses_with(y, fused);
      g.erase_all({y, a, b, rot, neg, x2, x1});
    }
    drop_empty_pass_through(g, cached_metas(g, ctx));  // the metas of the new steps too
  }

 private:
  // Phi-3 rotates x[..., :rd] and cats x[..., rd:] back on; at rd == d the tail is empty and the
  // cat is a copy of the rotary's result: its readers (calls) read the rotary itself.
  static void drop_empty_pass_through(Graph& g, MetaTable& metas) {
    for (Node* c : g.nodes()) {
      if (op_name(c) != "cat" || c->args.size() < 2 || !c->args[0].is_sequence() ||
          c->args[0].items.size() < 2 || !c->args[0].items[0].is_node())
        continue;
      Node* r = c->args[0].items[0].node;
      const Tensor* rm = metas.tensor(r);
      const Tensor* cm = metas.tensor(c);
      if (op_name(r) != "rotary_embedding" || !rm || !cm || rm->shape() != cm->shape() ||
          rm->dtype() != cm->dtype() ||
          !(int_is(c->args[1], -1) || int_is(c->args[1], rm->dim() - 1)))
        continue;
      std::vector<Node*> tails;
      bool empty = true;
      for (size_t i = 1; i < c->args[0].items.size(); ++i) {
        const Value& v = c->args[0].items[i];
        const Tensor* tm = v.is_node() ? metas.tensor(v.node) : nullptr;
        empty &= tm && tm->dim() == rm->dim() && tm->size(-1) == 0 && tm->dtype() == rm->dtype();
        if (v.is_node()) tails.push_back(v.node);
      }
      bool calls_only = true;
      for (Node* u : g.users(c)) calls_only &= u->is_call();
      if (!empty || !calls_only) continue;
      g.replace_all_uses_with(c, r);
      g.erase(c);
      for (Node* t : tails)
        if (g.users(t).empty() && op_name(t) == "slice") g.erase(t);
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_rotary_pass() {
  return std::make_unique<FuseRotaryPass>();
}

}  // namespace inplace
