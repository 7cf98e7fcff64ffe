// fuse_linear_epilogues (an engine pass, after fuse_weight_casts): the elementwise work that
// follows a fused_linear product at decode size joins the product's step.
//   add(r, fused_linear(x, w, b))                    -> fused_linear(x, w, b, residual=r)
//   mul(act(fused_linear(x, wg)), fused_linear(x, wu)) -> gated_mlp(x, wg, wu, act)
//   mul(act(p[.., :n/2]), p[.., n/2:]), p = fused_linear(x, w)
//                                                     -> gated_mlp(x, w[:n/2], w[n/2:], act)
// (either operand order; act silu or gelu(approximate='tanh'); the halves by chunk, split,
// split_with_sizes or slice, either half the gate; w's halves are slice views of the caller's
// weight, not copies). The residual stream's add after o_proj / down_proj and a gated MLP's gate,
// up, activation and mul (Llama's gate_proj and up_proj, Phi-3's gate_up_proj, Gemma's GeGLU)
// become one step each: on a GPU each step is a launch of a few microseconds, on the cpu a pass
// over a temporary. Only products whose input has at most options.decode_max_rows rows (a decode
// step, as the engine's backend declares it; a prompt keeps its matmul) and whose intermediates
// nothing else reads are fused; shapes and dtypes must match exactly (no broadcasting, no
// promotion). At a half dtype the fused ops round where the chain rounds (the product before the
// residual add; gate, up, the activation and the product), so the rewrite is exact there too.
#include <algorithm>

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
        fuse_gated_mlp(g, metas, n, rows, ctx.options);
    }
  }

 private:
  // float32, or a half dtype (a model exported in bf16 / fp16: the fused ops then round each
  // result of the chain to it, as the chain does).
  static bool computes_in(DType d) {
    return d == DType::kFloat32 || d == DType::kBFloat16 || d == DType::kFloat16;
  }

  // A fused_linear without a residual (or more weights), of at most `rows` input rows, with a
  // known result of a dtype the fused ops compute in.
  static bool decode_product(const MetaTable& metas, const Node* n, bool bias_allowed,
                             int64_t rows) {
    using namespace fused_linear;
    if (op_name(n) != kLinear || n->args.size() < 2 || !n->args[0].is_node() ||
        !n->args[1].is_node() || has_arg(n->args, kResidual) || has_items(n->args, kMoreWeights))
      return false;
    if (!n->kwargs.empty() || (has_arg(n->args, kBias) && !bias_allowed)) return false;
    const Tensor* x = metas.tensor(n->args[0].node);
    const Tensor* y = metas.tensor(n);
    if (!x || !y || x->dim() < 1 || !computes_in(y->dtype())) return false;
    const int64_t k = x->size(-1);
    return k != 0 && x->numel() / k <= rows;
  }

  // decode_product read only by `user`.
  static Node* decode_linear(const Graph& g, const MetaTable& metas, Node* n, const Node* user,
                             bool bias_allowed, int64_t rows) {
    if (g.users(n).size() != 1 || g.users(n)[0] != user) return nullptr;
    return decode_product(metas, n, bias_allowed, rows) ? n : nullptr;
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

  // The activation a gated MLP fuses (fused_linear's names): silu(x), or gelu(x, approximate=
  // 'tanh') (Gemma's GeGLU); null for anything else.
  static const char* gate_activation(const Node* act) {
    const std::string name = op_name(act);
    if (act->args.empty() || !act->args[0].is_node()) return nullptr;
    if (name == "silu")
      return act->args.size() == 1 && act->kwargs.empty() ? fused_linear::kSilu : nullptr;
    if (name != "gelu") return nullptr;
    // approximate, as a keyword or bound after the input
    const Value* approximate = act->args.size() == 2 ? &act->args[1] : nullptr;
    if (act->args.size() > 2 || (approximate && !act->kwargs.empty())) return nullptr;
    for (const auto& [key, v] : act->kwargs) {
      if (key != "approximate") return nullptr;
      approximate = &v;
    }
    return approximate && approximate->kind == Value::Kind::kString && approximate->s == "tanh"
               ? fused_linear::kGeluTanh
               : nullptr;
  }

  // One half of a product's columns: `piece` is getitem(chunk(p, 2, -1), i),
  // getitem(split(p, n / 2, -1), i), getitem(split_with_sizes(p, [n / 2, n / 2], -1), i) or
  // slice(p, -1, i * n / 2, (i + 1) * n / 2) with p = fused_linear(x, w) of one weight, no bias
  // and no residual, at decode size (Phi-3's gate_up_proj). Returns i (-1: none) and p.
  static int half_of(const MetaTable& metas, const Node* piece, int64_t rows, Node** product) {
    const std::string name = op_name(piece);
    if (!piece->kwargs.empty() || piece->args.size() < 2 || !piece->args[0].is_node()) return -1;
    Node* p = piece->args[0].node;
    int64_t half = -1, dim = -1;
    if (name == "getitem") {
      const Node* pieces = p;
      if (piece->args.size() != 2 || piece->args[1].kind != Value::Kind::kInt ||
          !pieces->kwargs.empty() || pieces->args.size() != 3 || !pieces->args[0].is_node())
        return -1;
      const int64_t i = piece->args[1].i;
      p = pieces->args[0].node;
      const Tensor* y = metas.tensor(p);
      if (!y || y->dim() < 1 || y->size(-1) % 2 || (i != 0 && i != 1)) return -1;
      const int64_t h = y->size(-1) / 2;
      const std::string container = op_name(pieces);
      const Value& by = pieces->args[1];
      const bool ok =
          (container == "chunk" && by.kind == Value::Kind::kInt && by.i == 2) ||
          (container == "split" && by.kind == Value::Kind::kInt && by.i == h) ||
          (container == "split_with_sizes" && by.is_sequence() && by.items.size() == 2 &&
           by.items[0].kind == Value::Kind::kInt && by.items[0].i == h &&
           by.items[1].kind == Value::Kind::kInt && by.items[1].i == h);
      if (!ok || pieces->args[2].kind != Value::Kind::kInt) return -1;
      half = i;
      dim = pieces->args[2].i;
    } else if (name == "slice") {
      const Tensor* y = metas.tensor(p);
      if (!y || y->dim() < 1 || y->size(-1) % 2 || piece->args.size() > 5) return -1;
      const int64_t n = y->size(-1), h = n / 2;
      auto at = [&](size_t i, int64_t fallback) -> int64_t {
        if (piece->args.size() <= i || piece->args[i].is_none()) return fallback;
        return piece->args[i].kind == Value::Kind::kInt ? piece->args[i].i : INT64_MIN;
      };
      int64_t begin = at(2, 0), end = at(3, n);
      if (begin == INT64_MIN || end == INT64_MIN || at(4, 1) != 1) return -1;
      begin = begin < 0 ? begin + n : begin;
      end = std::min(end < 0 ? end + n : end, n);
      if (begin == 0 && end == h)
        half = 0;
      else if (begin == h && end == n)
        half = 1;
      dim = at(1, 0);
    }
    const Tensor* y = metas.tensor(p);
    if (half < 0 || !y || (dim != -1 && dim != y->dim() - 1) ||
        !decode_product(metas, p, /*bias_allowed=*/false, rows))
      return -1;
    const Tensor* w = metas.tensor(p->args[1].node);
    if (!w || w->dim() != 2 || w->size(0) != y->size(-1)) return -1;
    *product = p;
    return static_cast<int>(half);
  }

  // Whether every reader of every node in `chain` but `last` is in `chain` (the chain leaves the
  // graph with `last`).
  static bool only_chain_reads(const Graph& g, const std::vector<Node*>& chain, const Node* last) {
    for (const Node* n : chain) {
      if (n == last) continue;
      for (const Node* u : g.users(n))
        if (std::find(chain.begin(), chain.end(), u) == chain.end()) return false;
    }
    return true;
  }

  static void replace_with_gated_mlp(Graph& g, MetaTable& metas, Node* mul, Value x, Value wg,
                                     Value wu, const char* act, const std::vector<Node*>& chain) {
    Node* fused =
        g.insert_before(mul, NodeOp::kCallFunction, "inplace.gated_mlp",
                        {std::move(x), std::move(wg), std::move(wu), Value::string(act)}, {},
                        mul->name + (act == fused_linear::kSilu ? "_swiglu" : "_geglu"));
    fused->meta = mul->meta;
    if (const Value* m = metas.find(mul)) metas.set(fused, *m);
    g.replace_all_uses_with(mul, fused);
    std::vector<Node*> gone;  // unique, readers first
    for (auto it = chain.rbegin(); it != chain.rend(); ++it)
      if (std::find(gone.begin(), gone.end(), *it) == gone.end()) gone.push_back(*it);
    g.erase_all(gone);
  }

  // Rows [half * h, (half + 1) * h) of weight `w` [2h, k]: a view of the caller's weight, which
  // is not copied (a contiguous slice of a contiguous weight).
  static Value weight_half(Graph& g, MetaTable& metas, const PassOptions& options, Node* before,
                           const Value& w, int half, int64_t h) {
    Node* slice = g.insert_before(before, NodeOp::kCallFunction, "aten.slice.Tensor",
                                  {w, Value::integer(0), Value::integer(half * h),
                                   Value::integer((half + 1) * h), Value::integer(1)},
                                  {}, w.node->name + (half ? "_up" : "_gate"));
    if (std::optional<Value> m = infer_node_meta(g, *slice, metas, options)) {
      slice->meta.shape = m->tensor.shape();
      slice->meta.dtype = m->tensor.dtype();
      metas.set(slice, *m);
    }
    return Value::node_ref(slice);
  }

  static void fuse_gated_mlp(Graph& g, MetaTable& metas, Node* mul, int64_t rows,
                             const PassOptions& options) {
    if (mul->args.size() > 2 || !mul->kwargs.empty()) return;
    for (size_t si : {size_t{0}, size_t{1}}) {
      Node* act_node = mul->args[si].node;
      const char* act = gate_activation(act_node);
      if (!act || g.users(act_node).size() != 1) continue;
      Node* gate_in = act_node->args[0].node;
      Node* up_in = mul->args[1 - si].node;
      if (!same_meta(metas, gate_in, up_in)) continue;
      // Two products of one input: act(x @ wg^T) * (x @ wu^T) (Llama's gate_proj and up_proj).
      Node* gate = decode_linear(g, metas, gate_in, act_node, /*bias_allowed=*/false, rows);
      Node* up = decode_linear(g, metas, up_in, mul, /*bias_allowed=*/false, rows);
      if (gate && up && gate->args[0].node == up->args[0].node) {
        replace_with_gated_mlp(g, metas, mul, gate->args[0], gate->args[1], up->args[1], act,
                               {mul, act_node, gate, up});
        return;
      }
      // Two halves of one product: its weight's row halves are the gate and up weights.
      Node* pg = nullptr;
      Node* pu = nullptr;
      const int hg = half_of(metas, gate_in, rows, &pg), hu = half_of(metas, up_in, rows, &pu);
      if (hg < 0 || hu < 0 || pg != pu) continue;
      std::vector<Node*> chain{mul, act_node, gate_in, up_in};
      if (gate_in->args[0].node != pg) chain.push_back(gate_in->args[0].node);  // chunk / split
      if (up_in->args[0].node != pg) chain.push_back(up_in->args[0].node);
      chain.push_back(pg);
      if (!only_chain_reads(g, chain, mul)) continue;
      const int64_t h = metas.tensor(pg)->size(-1) / 2;
      const Value wg = weight_half(g, metas, options, mul, pg->args[1], hg, h);
      const Value wu = weight_half(g, metas, options, mul, pg->args[1], hu, h);
      replace_with_gated_mlp(g, metas, mul, pg->args[0], wg, wu, act, chain);
      return;
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_linear_epilogues_pass() {
  return std::make_unique<FuseLinearEpiloguesPass>();
}

}  // namespace inplace
