// fuse_norm_prologues (an engine pass, after merge_sibling_linears; where the backend prefers it:
// GPU compiles): an RMSNorm whose only reader is a fused product at decode size joins the
// product's step.
//   fused_linear(rms_norm(x, [k], w, eps), W, b)       -> rms_norm_linear(x, w, eps, W, b)
//   gated_mlp(rms_norm(x, [k], w, eps), Wg, Wu, act)   -> rms_norm_gated_mlp(x, w, eps, Wg, Wu,
//   act)
// A decoder layer's input norm feeds the merged q/k/v product and its post-attention norm the
// gate/up product: on a GPU each norm was a launch of its own, a few microseconds at one token,
// and now every block of the product normalises the input rows it reads (a few kilobytes).
// A norm read by several such products (siblings merge_sibling_linears did not merge) joins each
// of them: every one normalises its input row.
// The norm may also reach the product through `select`s, `slice`s, getitems of ints and slices
// that leave the last dim whole (the LM head's h[:, -1]) and views that keep it (GPT-2's ln_f
// output viewed to [-1, 1, k]): the norm is per row, so norm(x)[i] = norm(x[i]), and the
// selections move to x. Off for the cpu, where the norm is a pass
// over one row either way. Only float32 x and norm weights of x's last dim, an eps given as a
// number, inputs of at most options.decode_max_rows rows, and a fused_linear without a residual.
// At a half dtype the norm is upcast_rms_norm (Hugging Face's RMSNorm in bf16 / fp16); the norm
// form then names it (norm="upcast" or "upcast_float_weight") and rounds where it rounds.
// Gemma's float32 weight 1 + w.to(float32) (an add and a cast, w the model's own weight: an
// engine input or constant) joins too: the form names "upcast_one_plus_weight" and reads w, its
// kernel adds the 1 as the chain's add does (one elementwise launch fewer per norm). A
// grouped product (more_weights: merge_sibling_linears) keeps its weights and their biases
// (more_biases), the norm form's last arguments.
// Where weights are prepared (options.prepare_weights) a LayerNorm (layer_norm(x, [k], w, b, eps),
// w and b of x's dtype, b perhaps None: GPT-2's ln_1, ln_2 and ln_f before the linears
// prepare_in_out_weights made of its Conv1D products) joins a fused_linear the same way: the form
// names "layer" and carries b as norm_bias. (Where they are not, GPT-2's products are fused_addmm
// steps with a LayerNorm prologue of their own, and ln_f stays the LM head's own step.)
#include "ops/fused_linear_args.h"
#include "ops/registry.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/norm_weight.h"
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
      if (op_name(n) == "rms_norm" || op_name(n) == "upcast_rms_norm" ||
          (op_name(n) == "layer_norm" && ctx.options.prepare_weights))
        norms.push_back(n);
    for (Node* n : norms) fuse(g, metas, n, ctx.options.decode_max_rows);
  }

 private:
  // The norm's input, weight, eps and the name a norm form gives it (fused_linear_args.h); false
  // when `norm` has another form. rms_norm(x, [k], w, eps): float32 x and w;
  // upcast_rms_norm(x, w, eps, weight_in_float): a half x, w of x's dtype (or float32, and then
  // perhaps Gemma's 1 + w: `dead` gets the add and the cast the form leaves unread).
  static bool norm_parts(const Graph& g, const MetaTable& metas, const Node* norm, Value* w,
                         Value* eps, const char** form, Value* bias, std::vector<Node*>* dead) {
    using namespace fused_linear;
    const auto& a = norm->args;
    if (!norm->kwargs.empty() || a.empty() || !a[0].is_node()) return false;
    const Tensor* x = metas.tensor(a[0].node);
    if (!x || x->dim() < 1 || x->size(-1) == 0) return false;
    const Node* wn = nullptr;
    DType want = DType::kFloat32;
    if (op_name(norm) == "layer_norm") return layer_parts(metas, norm, *x, w, eps, form, bias);
    if (op_name(norm) == "rms_norm") {
      if (a.size() != 4 || !a[2].is_node() || !a[3].is_number() || x->dtype() != DType::kFloat32 ||
          !a[1].is_sequence() || a[1].items.size() != 1 ||
          a[1].items[0].kind != Value::Kind::kInt || a[1].items[0].i != x->size(-1))
        return false;
      wn = a[2].node;
      *w = a[2];
      *eps = a[3];
      *form = kNormRms;
    } else {
      const bool in_float = a.size() > 3 && a[3].kind == Value::Kind::kBool && a[3].b;
      if (a.size() < 3 || !upcast_norm_has_default_tail(norm) || !a[1].is_node() ||
          !a[2].is_number() || (a.size() >= 4 && a[3].kind != Value::Kind::kBool) ||
          (x->dtype() != DType::kBFloat16 && x->dtype() != DType::kFloat16))
        return false;
      if (!in_float) want = x->dtype();
      wn = a[1].node;
      *w = a[1];
      *eps = a[2];
      *form = in_float ? kNormUpcastFloatWeight : kNormUpcast;
      if (in_float) {
        if (Node* own =
                one_plus_weight_source(g, metas, a[1].node, x->size(-1), x->dtype(), dead)) {
          *w = Value::node_ref(own);
          *form = kNormUpcastOnePlusWeight;
        }
      }
    }
    const Tensor* wm = metas.tensor(wn);
    return wm && wm->dtype() == want && wm->shape() == Shape{x->size(-1)};
  }

  // layer_norm(x, [k], w, b, eps[, cudnn_enable]): w a node, b a node or None, both [k] of x's
  // dtype (a float dtype), eps a number.
  static bool layer_parts(const MetaTable& metas, const Node* norm, const Tensor& x, Value* w,
                          Value* eps, const char** form, Value* bias) {
    const auto& a = norm->args;
    if (a.size() < 5 || a.size() > 6 || !is_floating(x.dtype()) || !a[1].is_sequence() ||
        a[1].items.size() != 1 || a[1].items[0].kind != Value::Kind::kInt ||
        a[1].items[0].i != x.size(-1) || !a[2].is_node() || !a[4].is_number() ||
        (!a[3].is_node() && !a[3].is_none()))
      return false;
    for (size_t i = 2; i < 4; ++i) {
      if (a[i].is_none()) continue;
      const Tensor* t = metas.tensor(a[i].node);
      if (!t || t->dtype() != x.dtype() || t->shape() != Shape{x.size(-1)}) return false;
    }
    *w = a[2];
    *bias = a[3];
    *eps = a[4];
    *form = fused_linear::kNormLayer;
    return true;
  }

  static void fuse(Graph& g, const MetaTable& metas, Node* norm, int64_t rows) {
    Value norm_weight, eps, norm_bias = Value::none();
    const char* form = nullptr;
    std::vector<Node*> dead{norm};  // and Gemma's 1 + w, which the form computes
    if (!norm_parts(g, metas, norm, &norm_weight, &eps, &form, &norm_bias, &dead)) return;
    const bool layer = form == std::string(fused_linear::kNormLayer);
    const Tensor* x = metas.tensor(norm->args[0].node);
    if (x->numel() / x->size(-1) > rows) return;
    const std::vector<Node*> users = g.users(norm);
    if (users.size() > 1) {
      // Products of one norm (siblings merge_sibling_linears did not merge): each normalises
      // the input itself, one launch less.
      for (Node* u : users)
        if (!fused_target(u, norm, layer)) return;
      for (Node* u : users)
        join(g, u, fused_target(u, norm, layer), norm->args[0], norm_weight, eps, form, norm_bias);
      g.erase_all(users);
      g.erase_all(dead);
      return;
    }
    // The picks between the norm and the product (select, slice, views that keep the rows
    // whole), each read only by the next.
    std::vector<Node*> picks;
    Node* product = users[0];
    while (row_pick(g, product, metas, picks.empty() ? norm : picks.back())) {
      picks.push_back(product);
      product = g.users(product)[0];
    }
    const char* target = fused_target(product, picks.empty() ? norm : picks.back(), layer);
    if (!target) return;
    Value source = norm->args[0];
    for (Node* pick : picks) {  // the same selection of x
      if (op_name(pick) == "alias") continue;
      std::vector<Value> pick_args = pick->args;
      pick_args[0] = source;
      Node* picked = g.insert_before(product, NodeOp::kCallFunction, pick->target,
                                     std::move(pick_args), pick->kwargs, pick->name + "_input");
      source = Value::node_ref(picked);
    }
    join(g, product, target, source, norm_weight, eps, form, norm_bias);
    dead.push_back(product);
    dead.insert(dead.end(), picks.rbegin(), picks.rend());
    g.erase_all(dead);
  }

  // The norm form `product` joins with its input's norm, or null when it cannot: a linear
  // without a residual or an epilogue, or a gated MLP (not after a LayerNorm: `layer`), reading
  // `input` only as its input.
  static const char* fused_target(const Node* product, const Node* input, bool layer) {
    using namespace fused_linear;
    const std::string name = op_name(product);
    const bool linear = name == kLinear;
    const char* target = linear                        ? "inplace.rms_norm_linear"
                         : name == kGatedMlp && !layer ? "inplace.rms_norm_gated_mlp"
                                                       : nullptr;
    if (!target || !product->kwargs.empty() || product->args.size() < 2 ||
        (linear &&
         (has_arg(product->args, kResidual) || has_items(product->args, kLinearEpilogue))) ||
        !product->args[0].is_node() || product->args[0].node != input)
      return nullptr;
    for (size_t i = 1; i < product->args.size(); ++i) {  // the norm only as the input
      if (product->args[i].is_node() && product->args[i].node == input) return nullptr;
      for (const Value& item : product->args[i].items)  // more_weights
        if (item.is_node() && item.node == input) return nullptr;
    }
    return target;
  }

  // Replaces `product` (erased by the caller) by its norm form on `source`.
  static void join(Graph& g, Node* product, const char* target, const Value& source,
                   const Value& norm_weight, const Value& eps, const char* form,
                   const Value& norm_bias) {
    using namespace fused_linear;
    const bool linear = op_name(product) == kLinear;
    std::vector<Value> args{source, norm_weight, eps};
    // The product's own after its input: a linear's weight and bias, a gated MLP's weights and
    // activation.
    const size_t own = std::min<size_t>(product->args.size(), linear ? kResidual : 4);
    args.insert(args.end(), product->args.begin() + 1, product->args.begin() + own);
    // A grouped product's more weights (and more biases) are the norm form's last arguments.
    const bool grouped = linear && has_items(product->args, kMoreWeights);
    if (form != std::string(kNormRms) || grouped) {  // the defaults up to `norm`, then its name
      if (linear) {
        args.resize(kCos, Value::none());
        args.insert(args.end(), {Value::none(), Value::none(), Value::integer(0)});
      } else if (args.size() < kNormActivation + 1) {
        args.push_back(Value::string(kSilu));
      }
      args.push_back(Value::string(form));
    }
    if (grouped) args.push_back(product->args[kMoreWeights]);
    if (grouped && has_items(product->args, kMoreBiases))
      args.push_back(product->args[kMoreBiases]);
    if (!norm_bias.is_none()) {  // a LayerNorm's bias, after the lists
      args.resize(kNormBias, Value::list({}));
      args.push_back(norm_bias);
    }
    Node* fused = g.insert_before(product, NodeOp::kCallFunction, target, std::move(args), {},
                                  product->name + "_normed");
    fused->meta = product->meta;
    g.replace_all_uses_with(product, fused);
  }

  // n = select(in, dim, i) or slice(in, dim, ...) of a dim other than the last, a getitem of
  // ints and slices that leaves the last dim whole, a view or reshape whose result keeps the
  // last dim (rows regrouped: the norm is per row), or alias(in), read only by one node; `in`
  // the norm or the pick before n.
  static bool row_pick(const Graph& g, const Node* n, const MetaTable& metas, const Node* in) {
    const std::string name = op_name(n);
    if (!n->kwargs.empty() || n->args.empty() || !n->args[0].is_node() || n->args[0].node != in ||
        g.users(n).size() != 1)
      return false;
    const Tensor* t = metas.tensor(in);
    if (!t || t->dim() < 1) return false;
    const int64_t ndim = t->dim();
    if (name == "alias") return n->args.size() == 1;  // torch.export's alias before the LM head
    if (is_view_or_reshape(n)) {
      const Tensor* r = metas.tensor(n);
      return r && r->dim() >= 1 && r->size(-1) == t->size(-1);
    }
    if ((name != "select" && name != "slice" && name != "getitem") || n->args.size() < 2)
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
