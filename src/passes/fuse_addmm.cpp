// fuse_addmm (an engine pass, after fuse_linear_epilogues): a product over a weight stored
// [in, out] at decode size (GPT-2's Conv1D: `addmm(b, x.view(-1, k), W).view(..., n)`), the
// residual add after it and the LayerNorm before it become one fused_addmm step
// (ops/fused_addmm_args.h). The weight is the caller's and stays where and as it lies; no
// transposed copy is made.
//   view(addmm(b, view(x, [-1, k]), W), [..., n])       -> fused_addmm(x, W, b)
//   add(r, fused_addmm(x, W, b))                        -> fused_addmm(x, W, b, r)
//   fused_addmm(layer_norm(x, [k], w, c, eps), W, b, r) -> fused_addmm(x, W, b, r, eps, w, c)
// (views and reshapes around the product, either operand order of the add; mm, an addmm
// without its bias, as well). Only products whose input has at most options.decode_max_rows
// rows, addmm's beta and alpha 1, every operand of one float dtype (float32, bfloat16, float16)
// with a 1-D bias and norm operands; the intermediates nothing else may read. The LayerNorm joins
// where the backend prefers norm prologues (options.fuse_norm_prologues) and each reader of the
// norm is such a product. A step the engine's backend would not run (options.kernel_supports)
// keeps its chain. The fused op rounds where the chain rounds, so the rewrite is exact.
#include "ops/fused_addmm_args.h"
#include "ops/registry.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

using namespace fused_addmm;

constexpr const char* kTarget = "inplace.fused_addmm";

bool computes_in(DType d) {
  return d == DType::kFloat32 || d == DType::kBFloat16 || d == DType::kFloat16;
}

class FuseAddmmPass : public Pass {
 public:
  std::string name() const override { return "fuse_addmm"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable& metas = cached_metas(g, ctx);
    std::vector<Node*> products;
    for (Node* n : g.nodes())
      if (op_name(n) == "addmm" || op_name(n) == "mm") products.push_back(n);
    std::vector<Node*> fused;
    for (Node* n : products)
      if (Node* f = fuse_product(g, metas, n, ctx.options)) fused.push_back(f);
    for (Node*& f : fused) f = fuse_residual(g, metas, f, ctx.options);
    if (!ctx.options.fuse_norm_prologues) return;
    std::vector<Node*> norms;
    for (Node* f : fused) {
      Node* x = f->args[kInput].node;
      if (op_name(x) == "layer_norm" && std::find(norms.begin(), norms.end(), x) == norms.end())
        norms.push_back(x);
    }
    for (Node* norm : norms) fuse_norm(g, metas, norm, ctx.options);
  }

 private:
  static Node* make(Graph& g, MetaTable& metas, Node* before, std::vector<Value> args,
                    Node* replaced, const std::string& name) {
    Node* fused =
        g.insert_before(before, NodeOp::kCallFunction, kTarget, std::move(args), {}, name);
    fused->meta = replaced->meta;
    if (const Value* m = metas.find(replaced)) metas.set(fused, *m);
    g.replace_all_uses_with(replaced, fused);
    return fused;
  }

  // addmm(b, v, W) or mm(v, W), v a view of x's rows, and the view of the product back to x's
  // leading dims when there is one: fused_addmm(x, W, b) replaces the view (or the product).
  static Node* fuse_product(Graph& g, MetaTable& metas, Node* mm, const PassOptions& options) {
    const bool has_bias = op_name(mm) == "addmm";
    const size_t at = has_bias ? 1 : 0;  // mat1's position
    if (mm->args.size() < at + 2 || !mm->args[at].is_node() || !mm->args[at + 1].is_node())
      return nullptr;
    if (has_bias) {
      if (!mm->args[0].is_node()) return nullptr;
      for (size_t i = 3; i < mm->args.size(); ++i)
        if (!is_number_one(mm->args[i])) return nullptr;
      for (const auto& [key, v] : mm->kwargs)
        if ((key != "beta" && key != "alpha") || !is_number_one(v)) return nullptr;
    } else if (mm->args.size() != 2 || !mm->kwargs.empty()) {
      return nullptr;
    }
    Node* rows = mm->args[at].node;
    const Tensor* v = metas.tensor(rows);
    const Tensor* y = metas.tensor(mm);
    if (!v || !y || v->dim() != 2 || !computes_in(y->dtype()) ||
        v->size(0) > options.decode_max_rows)
      return nullptr;
    // x: the rows' source when they are a view of it that keeps its last dim.
    Node* x = rows;
    if (is_view_or_reshape(rows)) {
      const Tensor* src = metas.tensor(rows->args[0].node);
      if (src && src->dim() >= 1 && src->size(-1) == v->size(1) && src->numel() == v->numel())
        x = rows->args[0].node;
    }
    // The product viewed back to x's leading dims: the fused op's own shape.
    Node* result = mm;
    const std::vector<Node*> users = g.users(mm);
    if (x != rows && users.size() == 1 && is_view_or_reshape(users[0])) {
      const Tensor* back = metas.tensor(users[0]);
      Shape want = metas.tensor(x)->shape();
      want.back() = y->size(1);
      if (back && back->shape() == want) result = users[0];
    }
    if (result == mm) x = rows;
    std::vector<Value> args{Value::node_ref(x), mm->args[at + 1],
                            has_bias ? mm->args[0] : Value::none()};
    if (!backend_runs(metas, kName, args, options)) return nullptr;
    Node* fused = make(g, metas, result, std::move(args), result, mm->name + "_fused");
    std::vector<Node*> dead{result};
    if (result != mm) dead.push_back(mm);
    g.erase_all(dead);
    if (rows != x && g.users(rows).empty()) g.erase(rows);
    return fused;
  }

  // add(r, f) or add(f, r) with alpha 1, f read by nothing else, r of f's shape and dtype:
  // fused_addmm(x, W, b, r). Returns the product's node (the new one when it fused).
  static Node* fuse_residual(Graph& g, MetaTable& metas, Node* f, const PassOptions& options) {
    const std::vector<Node*> users = g.users(f);
    if (users.size() != 1 || op_name(users[0]) != "add") return f;
    Node* add = users[0];
    if (add->args.size() < 2 || !add->args[0].is_node() || !add->args[1].is_node()) return f;
    if (add->args.size() > 2 && !is_number_one(add->args[2])) return f;
    for (const auto& [key, v] : add->kwargs)
      if (key != "alpha" || !is_number_one(v)) return f;
    if (add->args[0].node == add->args[1].node) return f;
    Node* r = add->args[0].node == f ? add->args[1].node : add->args[0].node;
    const Tensor* tf = metas.tensor(f);
    const Tensor* tr = metas.tensor(r);
    const Tensor* ta = metas.tensor(add);
    if (!tf || !tr || !ta || tr->shape() != tf->shape() || tr->dtype() != tf->dtype() ||
        ta->shape() != tf->shape() || ta->dtype() != tf->dtype())
      return f;
    std::vector<Value> args{f->args[kInput], f->args[kWeight], f->args[kBias], Value::node_ref(r)};
    if (!backend_runs(metas, kName, args, options)) return f;
    Node* fused = make(g, metas, add, std::move(args), add, add->name + "_fused");
    g.erase_all({add, f});
    return fused;
  }

  // layer_norm(x, [k], w, c, eps[, cudnn]) read only as the input of fused_addmm steps without a
  // prologue: each normalises x itself.
  static void fuse_norm(Graph& g, MetaTable& metas, Node* norm, const PassOptions& options) {
    const auto& a = norm->args;
    if (!norm->kwargs.empty() || a.size() < 5 || a.size() > 6 || !a[0].is_node() ||
        !a[4].is_number() || !a[1].is_sequence() || a[1].items.size() != 1)
      return;
    for (size_t i : {size_t{2}, size_t{3}})
      if (!a[i].is_none() && !a[i].is_node()) return;
    const Tensor* x = metas.tensor(a[0].node);
    if (!x || x->dim() < 1 || a[1].items[0].kind != Value::Kind::kInt ||
        a[1].items[0].i != x->size(-1))
      return;
    const std::vector<Node*> users = g.users(norm);
    std::vector<std::vector<Value>> joined;
    for (Node* u : users) {
      if (op_name(u) != kName || has_arg(u->args, kEps) || u->args[kInput].node != norm) return;
      for (size_t i = 1; i < u->args.size(); ++i)
        if (u->args[i].is_node() && u->args[i].node == norm) return;
      std::vector<Value> args = u->args;
      args.resize(kEps, Value::none());
      args[kInput] = a[0];
      args.insert(args.end(), {a[4], a[2], a[3]});
      if (!backend_runs(metas, kName, args, options)) return;
      joined.push_back(std::move(args));
    }
    for (size_t i = 0; i < users.size(); ++i)
      make(g, metas, users[i], std::move(joined[i]), users[i], users[i]->name + "_normed");
    g.erase_all(users);
    g.erase(norm);
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_addmm_pass() {
  return std::make_unique<FuseAddmmPass>();
}

}  // namespace inplace
