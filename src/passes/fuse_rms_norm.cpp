// fuse_rms_norm (an engine pass): the RMSNorm chain as Hugging Face's LlamaRMSNorm writes it,
//   w * (x * rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))
// becomes one rms_norm(x, [d], w, eps) step: one pass over x instead of six elementwise and
// reduction steps, each writing a temporary and dispatched on its own. Only chains whose
// intermediates nothing else reads are fused; the kernel keeps its statistics in double, so the
// result is within float32 rounding of the chain.
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

// The node argument `i` of n when it is a call of `name` read only by n.
Node* sole_input(const Graph& g, const Node* n, size_t i, const char* name) {
  if (n->args.size() <= i || !n->args[i].is_node()) return nullptr;
  Node* in = n->args[i].node;
  if (op_name(in) != name || g.users(in).size() != 1) return nullptr;
  return in;
}

class FuseRmsNormPass : public Pass {
 public:
  std::string name() const override { return "fuse_rms_norm"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable& metas = cached_metas(g, ctx);
    DtypeOf dtypes(metas);
    std::vector<Node*> muls;
    for (Node* n : g.nodes())
      if (op_name(n) == "mul") muls.push_back(n);
    for (Node* y : muls) {
      if (y->args.size() < 2 || !y->args[0].is_node() || !y->args[1].is_node()) continue;
      // y = w * t or t * w, w 1-D: a constant or an input (an exported model's parameter).
      for (size_t wi : {size_t{0}, size_t{1}}) {
        Node* w = y->args[wi].node;
        Node* t = sole_input(g, y, 1 - wi, "mul");
        if (t == nullptr || t->args.size() < 2) continue;
        if (!t->args[0].is_node()) continue;
        Node* x = t->args[0].node;
        Node* r = sole_input(g, t, 1, "rsqrt");
        Node* a = r ? sole_input(g, r, 0, "add") : nullptr;
        if (!a || a->args.size() < 2 || a->args[1].is_node() || !a->args[1].is_number()) continue;
        if (a->args.size() > 2 && !number_is(a->args[2], 1)) continue;  // alpha
        Node* m = sole_input(g, a, 0, "mean");
        if (!m || m->args.size() < 3 || !(m->args[2].kind == Value::Kind::kBool && m->args[2].b))
          continue;
        if (m->args.size() > 3 && !m->args[3].is_none()) continue;  // dtype
        Node* p = sole_input(g, m, 0, "pow");
        if (!p || p->args.size() < 2 || !p->args[0].is_node() || p->args[0].node != x ||
            !number_is(p->args[1], 2))
          continue;
        // Float32 x and weight (the chain's result dtype is then the fused op's), the weight one
        // value per element of x's last dim (checked again by rms_norm's shape rule).
        const Tensor* wm = metas.tensor(w);
        if (!wm || wm->dtype() != DType::kFloat32 || wm->dim() != 1 ||
            dtypes.of(x) != DType::kFloat32)
          continue;
        const int64_t d = wm->size(0);
        const Tensor* xm = metas.tensor(x);
        if (xm && (xm->dim() < 1 || xm->size(-1) != d)) continue;
        const Value& dims = m->args[1];  // the mean over the last dim only
        std::vector<int64_t> over;
        if (dims.is_sequence())
          for (const Value& v : dims.items) over.push_back(v.kind == Value::Kind::kInt ? v.i : -99);
        else if (dims.kind == Value::Kind::kInt)
          over.push_back(dims.i);
        if (over.size() != 1 || !(over[0] == -1 || (xm && over[0] == xm->dim() - 1))) continue;
        Node* fused = g.insert_before(y, NodeOp::kCallFunction, "aten.rms_norm.default",
                                      {Value::node_ref(x), Value::int_list({d}), Value::node_ref(w),
                                       Value::floating(a->args[1].as_double("fuse_rms_norm"))},
                                      {}, y->name + "_rms_norm");
        fused->meta = y->meta;
        g.replace_all_uses_with(y, fused);
        g.erase_all({y, t, r, a, m, p});
        break;
      }
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_rms_norm_pass() {
  return std::make_unique<FuseRmsNormPass>();
}

}  // namespace inplace
