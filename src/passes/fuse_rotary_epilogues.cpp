// fuse_rotary_epilogues (an engine pass, after fuse_norm_prologues): rotary embeddings applied to
// head-aligned column ranges of one rms_norm_linear product join that product's
// step. After merge_sibling_linears and fuse_norm_prologues a decoder layer reads
//   qkv = rms_norm_linear(x, nw, eps, W)                      [.., nq + nk + nv]
//   q = rotary_embedding(transpose(view(qkv[..., :nq], .., H, d), 1, 2), cos, sin)
//   k = rotary_embedding(transpose(view(qkv[..., nq:nq+nk], .., Hk, d), 1, 2), cos, sin)
// and becomes
//   qkv = rms_norm_linear(x, nw, eps, W, None, cos, sin, nq + nk)
//   q = transpose(view(qkv[..., :nq], ..)); k = ...
// the product rotating each d-wide block of its first nq + nk columns: on a GPU two launches of
// a few microseconds each (per layer) are gone. Conditions: every rotary on the product reads the
// same cos and sin of d elements (one position, broadcast over heads and rows), its input is a
// chain of single-reader views (a last-dim slice at a multiple of d, a view splitting the last
// dim into [.., d], transposes that keep the last dim last, aliases; no slice where the rotary
// reads the whole product, a q or k projection of its own), the rotated ranges tile a prefix of the
// columns, nothing else reads that prefix, and x, cos and sin share one dtype: float32, bfloat16 or
// float16 (the product's result is rounded to it, then the epilogue rotates with the rotary's own
// rounding points: each product and the sum rounded to the dtype, bit for bit the standalone step
// on every backend).
#include <algorithm>

#include "ops/fused_linear_args.h"
#include "ops/registry.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

using fused_linear::kCos;
using fused_linear::kRotaryCols;
using fused_linear::kSin;

constexpr const char* kProduct = "rms_norm_linear";

struct Chain {
  Node* rotary = nullptr;
  Node* slice = nullptr;  // the product's reader
  int64_t begin = 0, end = 0;
};

// A product without a rotary epilogue yet (rotary_cols absent or 0; its norm may follow).
bool unrotated_product(const Node* p) {
  return op_name(p) == kProduct && p->kwargs.empty() &&
         int_arg(p, fused_linear::kRotaryCols, 0) == 0;
}

class FuseRotaryEpiloguesPass : public Pass {
 public:
  std::string name() const override { return "fuse_rotary_epilogues"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable& metas = cached_metas(g, ctx);
    std::map<Node*, std::vector<Chain>> by_product;
    std::vector<Node*> order;
    for (Node* n : g.nodes()) {
      if (op_name(n) != "rotary_embedding") continue;
      Node* product = nullptr;
      Chain c;
      if (!trace(g, metas, n, &product, &c)) continue;
      if (!by_product.count(product)) order.push_back(product);
      by_product[product].push_back(c);
    }
    for (Node* p : order) fuse(g, metas, p, by_product[p]);
  }

 private:
  // Walks from rotary r up to the product through single-reader views; fills c.
  static bool trace(const Graph& g, const MetaTable& metas, Node* r, Node** product, Chain* c) {
    if (r->args.size() != 3 || !r->kwargs.empty() || !r->args[0].is_node() ||
        !r->args[1].is_node() || !r->args[2].is_node())
      return false;
    const Tensor* cos = metas.tensor(r->args[1].node);
    const Tensor* sin = metas.tensor(r->args[2].node);
    const Tensor* x = metas.tensor(r->args[0].node);
    // x, cos and sin of one float dtype (the product's): the epilogue rounds where the rotary
    // rounds (each product and the sum, to the dtype; identities at float32).
    const DType t = x ? x->dtype() : DType::kFloat32;
    if (!cos || !sin || !x || x->dim() < 1 ||
        (t != DType::kFloat32 && t != DType::kBFloat16 && t != DType::kFloat16) ||
        cos->dtype() != t || sin->dtype() != t)
      return false;
    const int64_t d = x->size(-1);
    if (d % 8 != 0 || cos->numel() != d || sin->numel() != d || cos->size(-1) != d ||
        sin->size(-1) != d)
      return false;
    Node* n = r->args[0].node;
    Node* reader = r;    // the chain's node reading n
    bool split = false;  // a view has made the last dim d
    while (true) {
      if (split && op_name(n) == kProduct) {
        // The chain reads the whole product (one holding only these heads: a k projection).
        const Tensor* y = metas.tensor(n);
        if (!unrotated_product(n) || !y || y->dim() < 1) return false;
        *product = n;
        c->rotary = r;
        c->slice = reader;
        c->begin = 0;
        c->end = y->size(-1);
        return true;
      }
      if (g.users(n).size() != 1 || n->args.empty() || !n->args[0].is_node()) return false;
      const std::string name = op_name(n);
      const Tensor* out = metas.tensor(n);
      const Tensor* in = metas.tensor(n->args[0].node);
      if (!out || !in || out->dim() < 1 || in->dim() < 1) return false;
      if (name == "alias") {  // the whole tensor (Phi-3's q[..., :rotary_dim] of every column)
        if (n->args.size() != 1 || !n->kwargs.empty() || out->shape() != in->shape()) return false;
      } else if (name == "transpose") {
        const int64_t nd = out->dim();
        int64_t a = int_arg(n, 1, INT64_MIN), b = int_arg(n, 2, INT64_MIN);
        if (a == INT64_MIN || b == INT64_MIN) return false;
        a = a < 0 ? a + nd : a;
        b = b < 0 ? b + nd : b;
        if (a == nd - 1 || b == nd - 1) return false;
      } else if (name == "view" || name == "reshape" || name == "_unsafe_view") {
        // [.., L] -> [.., L / d, d]: the leading dims' product kept, the last dim split.
        const int64_t L = in->size(-1);
        if (split || out->dim() < 2 || out->size(-1) != d || L % d != 0 || out->size(-2) != L / d ||
            out->numel() != in->numel())
          return false;
        split = true;
      } else if (name == "slice") {
        const int64_t nd = in->dim();
        int64_t dim = int_arg(n, 1, 0);
        dim = dim < 0 ? dim + nd : dim;
        const int64_t step = int_arg(n, 4, 1);
        if (dim != nd - 1 || step != 1 || !split) return false;
        const Node* p = n->args[0].node;
        if (!unrotated_product(p)) return false;
        const int64_t L = in->size(-1);
        int64_t begin = int_arg(n, 2, 0), end = int_arg(n, 3, L);
        if (begin == INT64_MIN || end == INT64_MIN) return false;
        begin = begin < 0 ? begin + L : begin;
        end = std::min(end < 0 ? end + L : end, L);
        if (begin < 0 || end <= begin || begin % d || (end - begin) != out->size(-1)) return false;
        *product = n->args[0].node;
        c->rotary = r;
        c->slice = n;
        c->begin = begin;
        c->end = end;
        return true;
      } else {
        return false;
      }
      reader = n;
      n = n->args[0].node;
    }
  }

  static bool before(const Graph& g, const Node* a, const Node* b) {
    for (const Node* n : g.nodes()) {
      if (n == a) return true;
      if (n == b) return false;
    }
    return false;
  }

  // Table t (cos or sin, d elements) as a node defined before the product: t, or the node under
  // a chain of views that keep its d elements in order (an exported graph unsqueezes the tables
  // inside each layer). Null when there is none.
  static Node* table_before(const Graph& g, const MetaTable& metas, Node* t, const Node* product) {
    const Tensor* m = metas.tensor(t);
    const int64_t d = m ? m->numel() : -1;
    while (!before(g, t, product)) {
      const std::string name = op_name(t);
      if ((name != "unsqueeze" && name != "squeeze" && name != "view" && name != "reshape" &&
           name != "_unsafe_view") ||
          t->args.empty() || !t->args[0].is_node())
        return nullptr;
      t = t->args[0].node;
      const Tensor* in = metas.tensor(t);
      if (!in || in->numel() != d) return nullptr;
    }
    return t;
  }

  static void fuse(Graph& g, const MetaTable& metas, Node* product, std::vector<Chain>& chains) {
    std::sort(chains.begin(), chains.end(),
              [](const Chain& a, const Chain& b) { return a.begin < b.begin; });
    // cos and sin defined before the product (the tables are read once, before the layers).
    Node* cos = table_before(g, metas, chains[0].rotary->args[1].node, product);
    Node* sin = table_before(g, metas, chains[0].rotary->args[2].node, product);
    if (!cos || !sin) return;
    int64_t covered = 0;
    for (const Chain& c : chains) {
      if (c.begin != covered || table_before(g, metas, c.rotary->args[1].node, product) != cos ||
          table_before(g, metas, c.rotary->args[2].node, product) != sin)
        return;
      covered = c.end;
    }
    // Nothing else reads the rotated prefix: every other reader is a last-dim slice starting
    // after it.
    const Tensor* y = metas.tensor(product);
    if (!y || y->dim() < 1) return;
    for (const Node* u : g.users(product)) {
      bool ours = false;
      for (const Chain& c : chains) ours |= c.slice == u;
      if (ours) continue;
      int64_t dim = int_arg(u, 1, 0);
      dim = dim < 0 ? dim + y->dim() : dim;
      if (op_name(u) != "slice" || u->args.empty() || !u->args[0].is_node() ||
          u->args[0].node != product || dim != y->dim() - 1 || int_arg(u, 2, 0) < covered)
        return;
    }
    if (product->args.size() <= kRotaryCols) product->args.resize(kRotaryCols + 1, Value::none());
    product->args[kCos] = Value::node_ref(cos);
    product->args[kSin] = Value::node_ref(sin);
    product->args[kRotaryCols] = Value::integer(covered);
    std::vector<Node*> dead;
    for (const Chain& c : chains) {
      g.replace_all_uses_with(c.rotary, c.rotary->args[0].node);
      dead.push_back(c.rotary);
    }
    g.erase_all(dead);
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_rotary_epilogues_pass() {
  return std::make_unique<FuseRotaryEpiloguesPass>();
}

}  // namespace inplace
