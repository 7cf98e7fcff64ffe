// fuse_norm_prologues (an engine pass, after merge_sibling_linears; where the backend prefers it:
// GPU compiles): an RMSNorm whose only reader is a fused product at decode size joins the
// product's step.
//   fused_linear(rms_norm(x, [k], w, eps), W, b)       -> rms_norm_linear(x, w, eps, W, b)
//   gated_mlp(rms_norm(x, [k], w, eps), Wg, Wu, act)   -> rms_norm_gated_mlp(x, w, eps, Wg, Wu,
//   act)
// A decoder layer's input norm feeds the merged q/k/v product and its post-attention norm the
// gate/up product: on a GPU each norm was a launch of its own, a few microseconds at one token,
// and now every block of the product normalises the input rows it reads (a few kilobytes).
// The norm may also reach the product through a `select`, a `slice` or a getitem of ints and
// slices that leaves the last dim whole (the LM head's h[:, -1]): the norm is per row, so
// norm(x)[i] = norm(x[i]), and the selection moves to x. Off for the cpu, where the norm is a pass
// over one row either way. Only float32 x and norm weights of x's last dim, an eps given as a
// number, inputs of at most options.decode_max_rows rows, and a fused_linear without a residual.
#include "ops/fused_linear_args.h"
#include "ops/registry.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

class FuseNormProloguesPass : public Pass {
 public:
  std::string name() const override { return "fuse_norm_prologues"; }
  void run(Graph& g, PassContext& ctx) override {
    if (!ctx.options.fuse_norm_prologues) return;
    MetaTable& metas = cached_metas(g, ctx);
    std::vector<Node*> norms;
    for (Node* n : g.nodes())
      if (op_name(n) == "rms_norm") norms.push_back(n);
    for (Node* n : norms) fuse(g, metas, n, ctx.options.decode_max_rows);
  }

 private:
  static void fuse(Graph& g, const MetaTable& metas, Node* norm, int64_t rows) {
    using namespace fused_linear;
    if (norm->args.size() != 4 || !norm->kwargs.empty() || !norm->args[0].is_node() ||
        !norm->args[2].is_node() || !norm->args[3].is_number())
      return;
    const Tensor* x = metas.tensor(norm->args[0].node);
    const Tensor* w = metas.tensor(norm->args[2].node);
    if (!x || !w || x->dtype() != DType::kFloat32 || w->dtype() != DType::kFloat32 ||
        x->dim() < 1 || x->size(-1) == 0 || x->numel() / x->size(-1) > rows)
      return;
    const Value& shape = norm->args[1];
    if (!shape.is_sequence() || shape.items.size() != 1 ||
        shape.items[0].kind != Value::Kind::kInt || shape.items[0].i != x->size(-1) ||
        w->shape() != Shape{x->size(-1)})
      return;
    const std::vector<Node*> users = g.users(norm);
    if (users.size() != 1) return;
    Node* product = users[0];
    Node* pick = nullptr;  // a select / slice between the norm and the product
    if (row_pick(g, product, x->dim(), norm)) {
      pick = product;
      product = g.users(pick)[0];
    }
    const std::string name = op_name(product);
    const bool linear = name == kLinear;
    const char* fused_target = linear              ? "inplace.rms_norm_linear"
                               : name == kGatedMlp ? "inplace.rms_norm_gated_mlp"
                                                   : nullptr;
    Node* input = pick ? pick : norm;
    if (!fused_target || !product->kwargs.empty() || product->args.size() < 2 ||
        (linear && has_arg(product->args, kResidual)) || !product->args[0].is_node() ||
        product->args[0].node != input)
      return;
    for (size_t i = 1; i < product->args.size(); ++i)  // the norm only as the input
      if (product->args[i].is_node() && product->args[i].node == input) return;
    Value source = norm->args[0];
    if (pick) {  // the same selection of x
      std::vector<Value> pick_args = pick->args;
      pick_args[0] = source;
      Node* picked = g.insert_before(product, NodeOp::kCallFunction, pick->target,
                                     std::move(pick_args), pick->kwargs, pick->name + "_input");
      source = Value::node_ref(picked);
    }
    std::vector<Value> args{source, norm->args[2], norm->args[3]};
    // The product's own after its input: a linear's weight and bias, a gated MLP's weights and
    // activation.
    const size_t own = std::min<size_t>(product->args.size(), linear ? kResidual : 4);
    args.insert(args.end(), product->args.begin() + 1, product->args.begin() + own);
    Node* fused = g.insert_before(product, NodeOp::kCallFunction, fused_target, std::move(args), {},
                                  product->name + "_normed");
    fused->meta = product->meta;
    g.replace_all_uses_with(product, fused);
    if (pick)
      g.erase_all({product, pick, norm});
    else
      g.erase_all({product, norm});
  }

  // n = select(norm, dim, i) or slice(norm, dim, ...) of a dim other than the last (of an
  // ndim-dim norm), read only by one node.
  static bool row_pick(const Graph& g, const Node* n, int64_t ndim, const Node* norm) {
    const std::string name = op_name(n);
    if ((name != "select" && name != "slice" && name != "getitem") || !n->kwargs.empty() ||
        n->args.size() < 2 || !n->args[0].is_node() || n->args[0].node != norm ||
        g.users(n).size() != 1)
      return false;
    if (name == "getitem") {  // x[a, b, ..] with fewer items than dims: ints and slices only
      const Value& index = n->args[1];
      if (n->args.size() != 2 || !index.is_sequence() ||
          static_cast<int64_t>(index.items.size()) >= ndim)
        return false;
      for (const Value& item : index.items) {
        if (item.kind == Value::Kind::kInt) continue;
        if (item.kind != Value::Kind::kSlice) return false;
        for (const Value& bound : item.items)  // constant bounds: no node to re-read
          if (bound.is_node()) return false;
      }
      return true;
    }
    const Value& dim = n->args[1];
    if (dim.kind != Value::Kind::kInt) return false;
    const int64_t d = dim.i < 0 ? dim.i + ndim : dim.i;
    return d >= 0 && d < ndim - 1;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_norm_prologues_pass() {
  return std::make_unique<FuseNormProloguesPass>();
}

}  // namespace inplace
