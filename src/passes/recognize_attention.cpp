// recognize_attention (an engine pass): attention written out op by op, as a PyTorch module
// without F.scaled_dot_product_attention (torch 1.13, Hugging Face's eager attention), as
// torch.fx or torch.export records it and as make_fx decomposes it,
//   s = (q @ k.transpose(-2, -1)) * c        (matmul, or bmm over views of the 4-D operands)
//   s = s.masked_fill(~mask, -inf)            (optional; mask bool)
//   o = softmax(s, -1) @ v
// becomes scaled_dot_product_attention(q, k, v, mask, scale=c) at float32, so the attention
// rewrites that follow (canonicalize_repeat_kv, attend_filled_prefix) and the fused kernel apply:
// within float rounding, the same products scaled and normalized in the kernel's order (1e-5).
// At bfloat16 and float16 it becomes rounded_attention(q, k, v, mask, scale=c, divide), which
// keeps the chain's roundings (each product, the scaling and the softmax rounded to the dtype):
// bitwise the chain, where the engine's backend has its kernel (else the chain stays).
#include <cmath>

#include "ops/registry.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

class Matcher {
 public:
  Matcher(const Graph& g, const MetaTable& metas) : g_(g), metas_(metas) {}

  // The 4-D tensor whose batch dims a bmm operand flattens: view(expand?(x4), [b*h, r, c]).
  Node* batched(Node* n) const {
    if (!is_one(n, {"view", "reshape", "_unsafe_view"})) return nullptr;
    Node* x = n->args[0].node;
    if (op_name(x) == "expand" && same_shape(x, x->args[0].node) && single(x)) x = x->args[0].node;
    const Tensor* t = metas_.tensor(x);
    const Tensor* o = metas_.tensor(n);
    if (!t || !o || t->dim() != 4 || o->dim() != 3 || o->size(0) != t->size(0) * t->size(1) ||
        o->size(1) != t->size(2) || o->size(2) != t->size(3))
      return nullptr;
    return x;
  }

  // A product of 4-D operands: matmul(a4, b4) as torch.fx and torch.export record `q @ k`, or
  // view(bmm(view(a4), view(b4)), 4-D) as make_fx decomposes it. `inner` is the node the
  // product's result is (the bmm, or n itself).
  bool product(Node* n, Node** a, Node** b) const {
    if (op_name(n) == "matmul" && n->args.size() == 2 && n->args[0].is_node() &&
        n->args[1].is_node()) {
      const Tensor* x = metas_.tensor(n->args[0].node);
      const Tensor* y = metas_.tensor(n->args[1].node);
      const Tensor* o = metas_.tensor(n);
      if (!x || !y || !o || x->dim() != 4 || y->dim() != 4 || o->dim() != 4 ||
          x->size(0) != y->size(0) || x->size(1) != y->size(1))
        return false;
      *a = n->args[0].node;
      *b = n->args[1].node;
      return true;
    }
    if (!is_one(n, {"view", "reshape", "_unsafe_view"})) return false;
    Node* mm = n->args[0].node;
    if (op_name(mm) != "bmm" || mm->args.size() < 2 || !mm->args[0].is_node() ||
        !mm->args[1].is_node() || !single(mm))
      return false;
    *a = batched(mm->args[0].node);
    *b = batched(mm->args[1].node);
    const Tensor* o = metas_.tensor(n);
    return *a && *b && o && o->dim() == 4;
  }

  // k.transpose(-2, -1) of a 4-D k: k.
  Node* untransposed(Node* n) const {
    if (op_name(n) != "transpose" || n->args.size() < 3 || !n->args[0].is_node()) return nullptr;
    const Value &d0 = n->args[1], &d1 = n->args[2];
    if (d0.kind != Value::Kind::kInt || d1.kind != Value::Kind::kInt) return nullptr;
    auto norm = [](int64_t d) { return d < 0 ? d + 4 : d; };
    const int64_t x = norm(d0.i), y = norm(d1.i);
    if (!((x == 2 && y == 3) || (x == 3 && y == 2))) return nullptr;
    const Tensor* t = metas_.tensor(n->args[0].node);
    return t && t->dim() == 4 ? n->args[0].node : nullptr;
  }

  bool single(const Node* n) const { return g_.users(n).size() == 1; }

  bool is_one(const Node* n, std::initializer_list<const char*> names) const {
    const std::string op = op_name(n);
    bool hit = false;
    for (const char* s : names) hit |= op == s;
    return hit && !n->args.empty() && n->args[0].is_node();
  }

  bool same_shape(const Node* a, const Node* b) const {
    const Tensor* x = metas_.tensor(a);
    const Tensor* y = metas_.tensor(b);
    return x && y && x->shape() == y->shape();
  }

  const MetaTable& metas() const { return metas_; }

 private:
  const Graph& g_;
  const MetaTable& metas_;
};

bool float_is(const Value& v, double* out) {
  if (!v.is_number()) return false;
  *out = v.as_double("recognize_attention");
  return true;
}

// Erases the chain's nodes that nothing reads now, and then what only they read (the views
// and the repeat_kv copies of the caches that fed the products), in a functional graph.
void erase_unread(Graph& g, std::vector<Node*> work) {
  while (!work.empty()) {
    Node* n = work.back();
    work.pop_back();
    if (!n->is_call() || !g.users(n).empty()) continue;
    std::vector<Node*> inputs = n->inputs();
    g.erase(n);
    for (Node* in : inputs) work.push_back(in);
  }
}

class RecognizeAttentionPass : public Pass {
 public:
  std::string name() const override { return "recognize_attention"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable& metas = cached_metas(g, ctx);
    Matcher m(g, metas);
    for (Node* out : g.nodes()) {
      Node *p = nullptr, *v = nullptr;
      if (!m.product(out, &p, &v)) continue;
      std::vector<Node*> dead = {out};
      if (op_name(out) != "matmul") dead.push_back(out->args[0].node);  // the bmm
      // p = softmax(s, -1) read only by this product.
      const std::string sm = op_name(p);
      if ((sm != "_softmax" && sm != "softmax") || !m.single(p) || p->args.size() < 2 ||
          !p->args[0].is_node() || p->args[1].kind != Value::Kind::kInt)
        continue;
      if (sm == "_softmax" &&
          !(p->args.size() < 3 || (p->args[2].kind == Value::Kind::kBool && !p->args[2].b)))
        continue;
      if (sm == "softmax" && p->args.size() > 2 && !p->args[2].is_none()) continue;
      if (!(p->args[1].i == -1 || p->args[1].i == 3)) continue;
      Node* s = p->args[0].node;
      dead.push_back(p);
      // s = masked_fill(s, ~mask, -inf), optional.
      Node* mask = nullptr;
      if (op_name(s) == "masked_fill" && m.single(s) && s->args.size() >= 3 &&
          s->args[0].is_node() && s->args[1].is_node()) {
        double fill = 0;
        Node* inv = s->args[1].node;
        const Tensor* im = metas.tensor(inv);
        const std::string io = op_name(inv);
        if (!float_is(s->args[2], &fill) || !(std::isinf(fill) && fill < 0) || !im ||
            im->dtype() != DType::kBool || (io != "bitwise_not" && io != "logical_not") ||
            inv->args.empty() || !inv->args[0].is_node())
          continue;
        mask = inv->args[0].node;
        dead.push_back(s);
        s = s->args[0].node;
      }
      // s = product * c or product / c, or the product itself.
      double scale = 1.0;
      Value constant = Value::none();  // c as the graph gives it (rounded_attention's scale)
      bool divide = false;
      const std::string so = op_name(s);
      if ((so == "mul" || so == "div") && s->args.size() >= 2 && s->args[0].is_node() &&
          m.single(s)) {
        double c = 0;
        if (!float_is(s->args[1], &c) || c == 0 || s->kwargs.size() > 0 ||
            (s->args.size() > 2 && !s->args[2].is_none()))
          continue;
        scale = so == "mul" ? c : 1.0 / c;
        constant = s->args[1];
        divide = so == "div";
        dead.push_back(s);
        s = s->args[0].node;
      }
      Node *q = nullptr, *kt = nullptr;
      if (!m.single(s) || !m.product(s, &q, &kt)) continue;
      dead.push_back(s);
      Node* k = m.untransposed(kt);
      const Tensor* qm = metas.tensor(q);
      const Tensor* km = k ? metas.tensor(k) : nullptr;
      const Tensor* vm = metas.tensor(v);
      if (!k || !qm || !km || !vm || km->dtype() != qm->dtype() || vm->dtype() != qm->dtype() ||
          qm->size(1) != km->size(1) || km->size(1) != vm->size(1))
        continue;
      const DType dt = qm->dtype();
      const bool half = dt == DType::kBFloat16 || dt == DType::kFloat16;
      if (dt != DType::kFloat32 && !half) continue;
      std::vector<Value> args = {ref(q),
                                 ref(k),
                                 ref(v),
                                 mask ? ref(mask) : Value::none(),
                                 Value::floating(0.0),
                                 Value::boolean(false)};
      // At a half dtype the constant must be a float, as rounded_attention's scale holds it.
      if (half && !constant.is_none() && constant.kind != Value::Kind::kFloat) continue;
      if (half) {
        std::vector<Value> all = args;
        for (const Value& kw : {constant, Value::boolean(false), Value::boolean(divide)})
          all.push_back(kw);
        if (!backend_runs(metas, "rounded_attention", all, ctx.options)) continue;
      }
      Node* attn =
          half ? g.insert_before(out, NodeOp::kCallFunction, "inplace.rounded_attention",
                                 std::move(args),
                                 {{"scale", constant},
                                  {"enable_gqa", Value::boolean(false)},
                                  {"divide", Value::boolean(divide)}},
                                 out->name + "_attention")
               : g.insert_before(
                     out, NodeOp::kCallFunction, "aten.scaled_dot_product_attention.default",
                     std::move(args),
                     {{"scale", Value::floating(scale)}, {"enable_gqa", Value::boolean(false)}},
                     out->name + "_attention");
      attn->meta = out->meta;
      g.replace_all_uses_with(out, attn);
      erase_unread(g, dead);
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_recognize_attention_pass() {
  return std::make_unique<RecognizeAttentionPass>();
}

}  // namespace inplace
