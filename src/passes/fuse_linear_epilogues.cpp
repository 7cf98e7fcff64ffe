// fuse_linear_epilogues (an engine pass, after fuse_weight_casts): the elementwise work that
// follows a fused_linear product at decode size joins the product's step.
//   add(r, fused_linear(x, w, b))                    -> fused_linear(x, w, b, residual=r)
//   mul(silu(fused_linear(x, wg)), fused_linear(x, wu))
//                                                     -> gated_mlp(x, wg, wu, "silu")
// (either operand order). The residual stream's add after o_proj / down_proj and a SwiGLU MLP's
// gate, up, silu and mul become one step each: on a GPU each step is a launch of a few
// microseconds, on the cpu a pass over a temporary. Only products whose input has at most
// options.decode_max_rows rows (a decode step, as the engine's backend declares it; a prompt
// keeps its matmul) and whose intermediates nothing
// else reads are fused; shapes and dtypes must match exactly (no broadcasting, no promotion). At
// a half dtype the fused ops round where the chain rounds (the product before the residual add;
// gate, up, silu and the product), so the rewrite is exact there too.
#include "ops/fused_linear_args.h"
#include "ops/registry.h"
#include "passes/dtype_of.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

class FuseLinearEpiloguesPass : public Pass {
 public:
  std::string name() const override { return "fuse_linear_epilogues"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable& metas = cached_metas(g, ctx);
    std::vector<Node*> candidates;
    for (Node* n : g.nodes()) {
      const std::string name = op_name(n);
      if (name == "add" || name == "mul") candidates.push_back(n);
    }
    for (Node* n : candidates) {
      if (n->args.size() < 2 || !n->args[0].is_node() || !n->args[1].is_node()) continue;
      const int64_t rows = ctx.options.decode_max_rows;
      if (op_name(n) == "add")
        fuse_residual(g, metas, n, rows);
      else
        fuse_gated_mlp(g, metas, n, rows);
    }
  }

 private:
  // float32, or a half dtype (a model exported in bf16 / fp16: the fused ops then round each
  // result of the chain to it, as the chain does).
  static bool computes_in(DType d) {
    return d == DType::kFloat32 || d == DType::kBFloat16 || d == DType::kFloat16;
  }

  // A fused_linear without a residual read only by `user`, of at most `rows` input rows, with a
  // known result of a dtype the fused ops compute in.
  static Node* decode_linear(const Graph& g, const MetaTable& metas, Node* n, const Node* user,
                             bool bias_allowed, int64_t rows) {
    using namespace fused_linear;
    if (op_name(n) != kLinear || g.users(n).size() != 1 || g.users(n)[0] != user) return nullptr;
    if (n->args.size() < 2 || !n->args[0].is_node() || !n->args[1].is_node() ||
        has_arg(n->args, kResidual))
      return nullptr;
    const bool has_bias = has_arg(n->args, kBias);
    if (!n->kwargs.empty() || (has_bias && !bias_allowed)) return nullptr;
    const Tensor* x = metas.tensor(n->args[0].node);
    const Tensor* y = metas.tensor(n);
    if (!x || !y || x->dim() < 1 || !computes_in(y->dtype())) return nullptr;
    const int64_t k = x->size(-1);
    if (k == 0 || x->numel() / k > rows) return nullptr;
    return n;
  }

  static bool same_meta(const MetaTable& metas, const Node* a, const Node* b) {
    const Tensor* ta = metas.tensor(a);
    const Tensor* tb = metas.tensor(b);
    return ta && tb && ta->shape() == tb->shape() && ta->dtype() == tb->dtype();
  }

  static void fuse_residual(Graph& g, MetaTable& metas, Node* add, int64_t rows) {
    // alpha (an argument or a keyword after normalize): only 1.
    auto is_one = [](const Value& v) {
      return (v.kind == Value::Kind::kInt || v.kind == Value::Kind::kFloat) &&
             v.as_double("fuse_linear_epilogues") == 1.0;
    };
    if (add->args.size() > 2 && !is_one(add->args[2])) return;
    for (const auto& [key, v] : add->kwargs)
      if (key != "alpha" || !is_one(v)) return;
    for (size_t li : {size_t{1}, size_t{0}}) {
      Node* lin = decode_linear(g, metas, add->args[li].node, add, /*bias_allowed=*/true, rows);
      Node* res = add->args[1 - li].node;
      if (!lin || res == lin || !same_meta(metas, lin, res)) continue;
      Value bias = lin->args.size() > 2 ? lin->args[2] : Value::none();
      Node* fused = g.insert_before(add, NodeOp::kCallFunction, "inplace.fused_linear",
                                    {lin->args[0], lin->args[1], bias, Value::node_ref(res)}, {},
                                    add->name + "_linear_add");
      fused->meta = add->meta;
      if (const Value* m = metas.find(add)) metas.set(fused, *m);  // read by the next layer
      g.replace_all_uses_with(add, fused);
      g.erase_all({add, lin});
      return;
    }
  }

  static void fuse_gated_mlp(Graph& g, MetaTable& metas, Node* mul, int64_t rows) {
    if (mul->args.size() > 2 || !mul->kwargs.empty()) return;
    for (size_t si : {size_t{0}, size_t{1}}) {
      Node* silu = mul->args[si].node;
      if (op_name(silu) != "silu" || g.users(silu).size() != 1 || silu->args.size() != 1 ||
          !silu->args[0].is_node() || !silu->kwargs.empty())
        continue;
      Node* gate = decode_linear(g, metas, silu->args[0].node, silu, /*bias_allowed=*/false, rows);
      Node* up = decode_linear(g, metas, mul->args[1 - si].node, mul, /*bias_allowed=*/false, rows);
      if (!gate || !up || gate->args[0].node != up->args[0].node) continue;
      if (!same_meta(metas, gate, up)) continue;
      Node* fused = g.insert_before(
          mul, NodeOp::kCallFunction, "inplace.gated_mlp",
          {gate->args[0], gate->args[1], up->args[1], Value::string(fused_linear::kSilu)}, {},
          mul->name + "_swiglu");
      fused->meta = mul->meta;
      if (const Value* m = metas.find(mul)) metas.set(fused, *m);
      g.replace_all_uses_with(mul, fused);
      g.erase_all({mul, silu, gate, up});
      return;
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_linear_epilogues_pass() {
  return std::make_unique<FuseLinearEpiloguesPass>();
}

}  // namespace inplace
