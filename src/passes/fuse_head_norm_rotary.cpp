// fuse_head_norm_rotary (an engine pass, after fuse_rms_norm, fuse_rotary and, where the backend
// prefers them, merge_sibling_linears and fuse_norm_prologues, whose merged q/k/v product its
// second half reads): a Hugging Face
// RMSNorm of each head right before the rotary, as Qwen3 and Gemma 3 normalise q and k,
//   q = rotary_embedding(transpose(upcast_rms_norm(view(q_proj(x), .., H, d), w, eps), 1, 2),
//                        cos, sin)
// becomes one step, rms_norm_rotary(transpose(view(..), 1, 2), w, eps, weight_in_float, cos,
// sin): on a GPU one launch a head group instead of two, and the normalised heads are never
// written. The norm is over the rotary's last dim, so it commutes with the transposes between
// them (each keeps the last dim last); the chain between the two is single-reader transposes and
// aliases, nothing else reads the norm, and the head is at most 1024 wide. Every backend computes
// the fused step as the two steps do, rounding where they round (bitwise).
//
// Then a layer's q and k steps of one decode row become one: where two such steps read adjacent
// column ranges of one product (transpose(view(slice(P, -1, a, b), [1, 1, h, d]), 1, 2), the
// second range starting where the first ends) with the same cos, sin (one position: d elements),
// eps and weight form, they are one rms_norm_rotary(view(slice(P, -1, a1, b2), [1, 1, h1 + h2,
// d]), w1, eps, weight_in_float, cos, sin, w2, h1), and q and k transposed slices of it: on a GPU
// one launch for both, and the k cache write after it stores from its epilogue.
#include <algorithm>
#include <set>

#include "ops/registry.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/norm_weight.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

constexpr int64_t kMaxHead = 1024;  // the CUDA kernel's row in shared memory

// A transpose of two dims other than the last, or an alias: the last dim stays last.
bool keeps_last_dim(const Node* n, int64_t rank) {
  const std::string name = op_name(n);
  if (name == "alias") return n->args.size() == 1 && n->kwargs.empty();
  if (name != "transpose" || n->args.size() != 3 || !n->kwargs.empty()) return false;
  int64_t a = int_arg(n, 1, INT64_MIN), b = int_arg(n, 2, INT64_MIN);
  if (a == INT64_MIN || b == INT64_MIN) return false;
  a = a < 0 ? a + rank : a;
  b = b < 0 ? b + rank : b;
  return a >= 0 && b >= 0 && a != rank - 1 && b != rank - 1 && a < rank && b < rank;
}

class FuseHeadNormRotaryPass : public Pass {
 public:
  std::string name() const override { return "fuse_head_norm_rotary"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable& metas = cached_metas(g, ctx);
    std::vector<Node*> rotaries;
    for (Node* n : g.nodes())
      if (op_name(n) == "rotary_embedding") rotaries.push_back(n);
    for (Node* r : rotaries) fuse(g, metas, r);
    merge_heads(g, cached_metas(g, ctx));
  }

 private:
  static void fuse(Graph& g, MetaTable& metas, Node* r) {
    if (r->args.size() != 3 || !r->kwargs.empty() || !r->args[0].is_node()) return;
    const Tensor* rm = metas.tensor(r);
    if (!rm || rm->dim() < 1 || rm->size(-1) > kMaxHead) return;
    // Up from the rotary's x through single-reader transposes and aliases to the norm.
    std::vector<Node*> chain;  // the views, the rotary's end first
    Node* n = r->args[0].node;
    while (op_name(n) != "upcast_rms_norm") {
      if (g.users(n).size() != 1 || n->args.empty() || !n->args[0].is_node() ||
          !keeps_last_dim(n, rm->dim()))
        return;
      chain.push_back(n);
      n = n->args[0].node;
    }
    Node* norm = n;
    const Tensor* nm = metas.tensor(norm);
    if (g.users(norm).size() != 1 || norm->args.size() < 3 || !norm->kwargs.empty() ||
        !upcast_norm_has_default_tail(norm) || !norm->args[0].is_node() || !nm ||
        nm->dim() != rm->dim() || nm->dtype() != rm->dtype())
      return;
    // The views again, now over the norm's input (the same shapes: the norm keeps x's).
    Value x = norm->args[0];
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      std::vector<Value> args = (*it)->args;
      args[0] = x;
      Node* v = g.insert_before(r, NodeOp::kCallFunction, (*it)->target, args, {},
                                (*it)->name + "_of_input");
      v->meta = (*it)->meta;
      x = Value::node_ref(v);
    }
    const Value in_float = norm->args.size() > 3 ? norm->args[3] : Value::boolean(false);
    Node* fused =
        g.insert_before(r, NodeOp::kCallFunction, "inplace.rms_norm_rotary",
                        {x, norm->args[1], norm->args[2], in_float, r->args[1], r->args[2]}, {},
                        r->name + "_head_norm");
    fused->meta = r->meta;
    g.replace_all_uses_with(r, fused);
    std::vector<Node*> dead{r};
    dead.insert(dead.end(), chain.begin(), chain.end());
    dead.push_back(norm);
    g.erase_all(dead);
  }
  // rms_norm_rotary(transpose(view(slice(P, -1, a, b), [1, 1, h, d]), 1, 2), w, eps, f, cos, sin)
  // with one-position cos and sin, each view read once.
  struct Heads {
    Node *r, *t, *v, *s, *p;
    int64_t a, b, h, d;
  };
  static bool heads_of(const Graph& g, const MetaTable& metas, Node* r, Heads* out) {
    if (r->args.size() != 6 || !r->kwargs.empty() || !r->args[0].is_node()) return false;
    Node* t = r->args[0].node;
    if (op_name(t) != "transpose" || g.users(t).size() != 1 || t->args.size() != 3 ||
        !t->args[0].is_node())
      return false;
    int64_t d0 = int_arg(t, 1, INT64_MIN), d1 = int_arg(t, 2, INT64_MIN);
    if (!((d0 == 1 && d1 == 2) || (d0 == 2 && d1 == 1))) return false;
    Node* v = t->args[0].node;
    const std::string vn = op_name(v);
    if ((vn != "view" && vn != "reshape" && vn != "_unsafe_view") || g.users(v).size() != 1 ||
        v->args.empty() || !v->args[0].is_node())
      return false;
    Node* s = v->args[0].node;
    if (op_name(s) != "slice" || g.users(s).size() != 1 || s->args.size() < 4 ||
        !s->args[0].is_node())
      return false;
    const Tensor* vm = metas.tensor(v);
    const Tensor* sm = metas.tensor(s);
    const Tensor* pm = metas.tensor(s->args[0].node);
    const Tensor* cm = r->args[4].is_node() ? metas.tensor(r->args[4].node) : nullptr;
    const Tensor* nm = r->args[5].is_node() ? metas.tensor(r->args[5].node) : nullptr;
    if (!vm || !sm || !pm || !cm || !nm || vm->dim() != 4 || vm->size(0) != 1 || vm->size(1) != 1 ||
        sm->dim() != 3 || pm->dim() != 3 || pm->size(0) != 1 || pm->size(1) != 1 ||
        !pm->is_contiguous())
      return false;
    const int64_t h = vm->size(2), d = vm->size(3);
    if (cm->numel() != d || nm->numel() != d) return false;
    int64_t dim = int_arg(s, 1, INT64_MIN), a = int_arg(s, 2, INT64_MIN),
            b = int_arg(s, 3, INT64_MIN);
    const int64_t step = int_arg(s, 4, 1);
    if (dim != -1 && dim != 2) return false;
    if (a == INT64_MIN || b == INT64_MIN || step != 1 || a < 0) return false;
    b = std::min(b, pm->size(2));
    if (b - a != h * d) return false;
    *out = {r, t, v, s, s->args[0].node, a, b, h, d};
    return true;
  }

  static bool same_value(const Value& x, const Value& y) {
    if (x.is_node() || y.is_node()) return x.is_node() && y.is_node() && x.node == y.node;
    if (x.kind != y.kind) return false;
    if (x.kind == Value::Kind::kBool) return x.b == y.b;
    if (x.kind == Value::Kind::kInt) return x.i == y.i;
    if (x.kind == Value::Kind::kFloat) return x.f == y.f;
    return false;
  }

  static void merge_heads(Graph& g, const MetaTable& metas) {
    std::vector<Heads> all;
    for (Node* n : g.nodes()) {
      Heads h;
      if (op_name(n) == "rms_norm_rotary" && heads_of(g, metas, n, &h)) all.push_back(h);
    }
    std::set<Node*> done;
    for (const Heads& q : all)
      for (const Heads& k : all) {
        if (done.count(q.r) || done.count(k.r) || q.r == k.r || q.p != k.p || q.b != k.a ||
            q.d != k.d)
          continue;
        bool same = true;
        for (int i : {2, 3, 4, 5}) same &= same_value(q.r->args[i], k.r->args[i]);
        const Tensor* qm = metas.tensor(q.r);
        const Tensor* km = metas.tensor(k.r);
        if (!same || !qm || !km || qm->dtype() != km->dtype()) continue;
        merge(g, q, k);
        done.insert(q.r);
        done.insert(k.r);
      }
  }

  static void merge(Graph& g, const Heads& q, const Heads& k) {
    Node* at = q.r;  // the earlier of the two steps
    for (Node* n : g.nodes()) {
      if (n == q.r || n == k.r) {
        at = n;
        break;
      }
    }
    auto call = [&](const char* target, std::vector<Value> args, const std::string& name) {
      return g.insert_before(at, NodeOp::kCallFunction, target, std::move(args), {}, name);
    };
    const std::string base = q.r->name;
    Node* s = call("aten.slice.Tensor",
                   {Value::node_ref(q.p), Value::integer(-1), Value::integer(q.a),
                    Value::integer(k.b), Value::integer(1)},
                   base + "_qk_cols");
    Node* v =
        call("aten.view.default", {Value::node_ref(s), Value::int_list({1, 1, q.h + k.h, q.d})},
             base + "_qk_heads");
    const std::vector<Value>& a = q.r->args;
    Node* qk =
        call("inplace.rms_norm_rotary",
             {Value::node_ref(v), a[1], a[2], a[3], a[4], a[5], k.r->args[1], Value::integer(q.h)},
             base + "_qk");
    auto part = [&](const Heads& x, int64_t b, int64_t e, const std::string& name) {
      Node* sl = call("aten.slice.Tensor",
                      {Value::node_ref(qk), Value::integer(2), Value::integer(b), Value::integer(e),
                       Value::integer(1)},
                      name + "_heads");
      Node* tr = call("aten.transpose.int",
                      {Value::node_ref(sl), Value::integer(1), Value::integer(2)}, name + "_of_qk");
      tr->meta = x.r->meta;
      g.replace_all_uses_with(x.r, tr);
    };
    part(q, 0, q.h, q.r->name);
    part(k, q.h, q.h + k.h, k.r->name);
    g.erase_all({q.r, q.t, q.v, q.s, k.r, k.t, k.v, k.s});
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_head_norm_rotary_pass() {
  return std::make_unique<FuseHeadNormRotaryPass>();
}

}  // namespace inplace
