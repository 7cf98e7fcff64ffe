// fuse_rms_norm (an engine pass): the RMSNorm chain as Hugging Face's LlamaRMSNorm writes it,
//   w * (x * rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))
// becomes one rms_norm(x, [d], w, eps) step: one pass over x instead of six elementwise and
// reduction steps, each writing a temporary and dispatched on its own. Only chains whose
// intermediates nothing else reads are fused; the kernel keeps its statistics in double, so the
// result is within float32 rounding of the chain.
// At a half dtype dt (a model exported in bf16 or fp16) the chain works on x.to(float32) and
// casts back: Llama's, Mistral's, Qwen2's and Phi-3's `w * h.to(dt)` and Gemma's
// `(h * (1 + w.float())).to(dt)` (or type_as(x)), h the float32 normalised x, become
// upcast_rms_norm(x, w, eps, weight_in_float): exact, its kernels round where the chain rounds.
#include "ops/registry.h"
#include "passes/dtype_of.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

bool number_is(const Value& v, double want) {
  return (v.kind == Value::Kind::kInt || v.kind == Value::Kind::kFloat) &&
         v.as_double("fuse_rms_norm") == want;
}

bool is_half(std::optional<DType> d) {
  return d == DType::kBFloat16 || d == DType::kFloat16;
}

// The node argument `i` of n when it is a call of `name` read only by n.
Node* sole_input(const Graph& g, const Node* n, size_t i, const char* name) {
  if (n->args.size() <= i || !n->args[i].is_node()) return nullptr;
  Node* in = n->args[i].node;
  if (op_name(in) != name || g.users(in).size() != 1) return nullptr;
  return in;
}

// t = x * rsqrt(x.pow(2).mean(-1, keepdim=True) + eps), its intermediates read only by the
// chain (x is also read by the pow).
struct Stats {
  Node* x = nullptr;
  std::vector<Node*> chain;  // rsqrt, add, mean, pow
  double eps = 0;
};

std::optional<Stats> match_stats(const Graph& g, const MetaTable& metas, const Node* t) {
  if (t->args.size() < 2 || !t->args[0].is_node()) return std::nullopt;
  Node* x = t->args[0].node;
  Node* r = sole_input(g, t, 1, "rsqrt");
  Node* a = r ? sole_input(g, r, 0, "add") : nullptr;
  if (!a || a->args.size() < 2 || a->args[1].is_node() || !a->args[1].is_number())
    return std::nullopt;
  if (a->args.size() > 2 && !number_is(a->args[2], 1)) return std::nullopt;  // alpha
  Node* m = sole_input(g, a, 0, "mean");
  if (!m || m->args.size() < 3 || !(m->args[2].kind == Value::Kind::kBool && m->args[2].b))
    return std::nullopt;
  if (m->args.size() > 3 && !m->args[3].is_none()) return std::nullopt;  // dtype
  Node* p = sole_input(g, m, 0, "pow");
  if (!p || p->args.size() < 2 || !p->args[0].is_node() || p->args[0].node != x ||
      !number_is(p->args[1], 2))
    return std::nullopt;
  const Tensor* xm = metas.tensor(x);
  const Value& dims = m->args[1];  // the mean over the last dim only
  std::vector<int64_t> over;
  if (dims.is_sequence())
    for (const Value& v : dims.items) over.push_back(v.kind == Value::Kind::kInt ? v.i : -99);
  else if (dims.kind == Value::Kind::kInt)
    over.push_back(dims.i);
  if (over.size() != 1 || !(over[0] == -1 || (xm && over[0] == xm->dim() - 1))) return std::nullopt;
  return Stats{x, {r, a, m, p}, a->args[1].as_double("fuse_rms_norm")};
}

// A 1-D weight of `dtype` with one value per element of x's last dim.
bool weight_fits(const MetaTable& metas, const Node* w, const Node* x, DType dtype) {
  const Tensor* wm = metas.tensor(w);
  const Tensor* xm = metas.tensor(x);
  return wm && wm->dtype() == dtype && wm->dim() == 1 &&
         (!xm || (xm->dim() >= 1 && xm->size(-1) == wm->size(0)));
}

// c casts its first argument to dt and nothing else: to / _to_copy (dtype only) or type_as.
bool cast_to(const Node* c, DType dt, DtypeOf& dtypes) {
  const std::string name = op_name(c);
  if (c->args.empty() || !c->args[0].is_node() || dtypes.of(c) != dt) return false;
  if (name == "type_as") return c->args.size() == 2 && c->kwargs.empty();
  return (name == "to" || name == "_to_copy") && cast_only_to_dtype(resolve_node(*c), dt);
}

class FuseRmsNormPass : public Pass {
 public:
  std::string name() const override { return "fuse_rms_norm"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable& metas = cached_metas(g, ctx);
    DtypeOf dtypes(metas);
    fuse_upcast(g, metas, dtypes);
    std::vector<Node*> muls;
    for (Node* n : g.nodes())
      if (op_name(n) == "mul") muls.push_back(n);
    for (Node* y : muls) {
      if (y->args.size() < 2 || !y->args[0].is_node() || !y->args[1].is_node()) continue;
      // y = w * t or t * w, w 1-D: a constant or an input (an exported model's parameter).
      for (size_t wi : {size_t{0}, size_t{1}}) {
        Node* w = y->args[wi].node;
        Node* t = sole_input(g, y, 1 - wi, "mul");
        if (t == nullptr) continue;
        const std::optional<Stats> s = match_stats(g, metas, t);
        // Float32 x and weight (the chain's result dtype is then the fused op's), the weight one
        // value per element of x's last dim (checked again by rms_norm's shape rule).
        if (!s || dtypes.of(s->x) != DType::kFloat32 ||
            !weight_fits(metas, w, s->x, DType::kFloat32))
          continue;
        const int64_t d = metas.tensor(w)->size(0);
        Node* fused = g.insert_before(y, NodeOp::kCallFunction, "aten.rms_norm.default",
                                      {Value::node_ref(s->x), Value::int_list({d}),
                                       Value::node_ref(w), Value::floating(s->eps)},
                                      {}, y->name + "_rms_norm");
        fused->meta = y->meta;
        g.replace_all_uses_with(y, fused);
        std::vector<Node*> dead{y, t};
        dead.insert(dead.end(), s->chain.begin(), s->chain.end());
        g.erase_all(dead);
        break;
      }
    }
  }

 private:
  // The half-dtype forms, from their final node `y` (the weight's mul, or Gemma's cast back).
  static void fuse_upcast(Graph& g, MetaTable& metas, DtypeOf& dtypes) {
    std::vector<Node*> ends;
    for (Node* n : g.nodes()) {
      const std::string name = op_name(n);
      if ((name == "mul" || name == "to" || name == "_to_copy" || name == "type_as") &&
          is_half(dtypes.of(n)))
        ends.push_back(n);
    }
    for (Node* y : ends) {
      const DType dt = *dtypes.of(y);
      if (y->args.size() < 2 || !y->args[0].is_node()) continue;
      Node* w = nullptr;
      Node* h = nullptr;  // the float32 normalised x
      std::vector<Node*> dead{y};
      bool in_float = false;
      if (op_name(y) == "mul") {  // w * h.to(dt)
        if (!y->args[1].is_node() || !y->kwargs.empty()) continue;
        for (size_t wi : {size_t{0}, size_t{1}}) {
          Node* c = y->args[1 - wi].node;
          if (g.users(c).size() != 1 || !cast_to(c, dt, dtypes)) continue;
          Node* t = sole_input(g, c, 0, "mul");
          if (!t) continue;
          w = y->args[wi].node;
          h = t;
          dead.push_back(c);
          break;
        }
      } else if (cast_to(y, dt, dtypes)) {  // (h * w).to(dt), w float32
        Node* p = sole_input(g, y, 0, "mul");
        if (!p || p->args.size() != 2 || !p->args[0].is_node() || !p->args[1].is_node()) continue;
        for (size_t wi : {size_t{0}, size_t{1}}) {
          Node* t = sole_input(g, p, 1 - wi, "mul");
          if (!t) continue;
          w = p->args[wi].node;
          h = t;
          in_float = true;
          dead.push_back(p);
          break;
        }
      }
      if (!h) continue;
      const std::optional<Stats> s = match_stats(g, metas, h);
      // s->x is x.to(float32) of a dt x, read only by the chain.
      if (!s || g.users(s->x).size() != 2 || !cast_to(s->x, DType::kFloat32, dtypes) ||
          op_name(s->x) == "type_as" || dtypes.of(s->x->args[0].node) != dt)
        continue;
      Node* x = s->x->args[0].node;
      if (!weight_fits(metas, w, x, in_float ? DType::kFloat32 : dt)) continue;
      Node* fused = g.insert_before(y, NodeOp::kCallFunction, "inplace.upcast_rms_norm",
                                    {Value::node_ref(x), Value::node_ref(w),
                                     Value::floating(s->eps), Value::boolean(in_float)},
                                    {}, y->name + "_rms_norm");
      fused->meta = y->meta;
      if (const Value* m = metas.find(y)) metas.set(fused, *m);
      g.replace_all_uses_with(y, fused);
      dead.push_back(h);
      dead.insert(dead.end(), s->chain.begin(), s->chain.end());
      dead.push_back(s->x);
      g.erase_all(dead);
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_rms_norm_pass() {
  return std::make_unique<FuseRmsNormPass>();
}

}  // namespace inplace
