// fuse_head_norm_rotary (an engine pass, after fuse_rms_norm and fuse_rotary): a Hugging Face
// RMSNorm of each head right before the rotary, as Qwen3 and Gemma 3 normalise q and k,
//   q = rotary_embedding(transpose(upcast_rms_norm(view(q_proj(x), .., H, d), w, eps), 1, 2),
//                        cos, sin)
// becomes one step, rms_norm_rotary(transpose(view(..), 1, 2), w, eps, weight_in_float, cos,
// sin): on a GPU one launch a head group instead of two, and the normalised heads are never
// written. The norm is over the rotary's last dim, so it commutes with the transposes between
// them (each keeps the last dim last); the chain between the two is single-reader transposes and
// aliases, nothing else reads the norm, and the head is at most 1024 wide. Every backend computes
// the fused step as the two steps do, rounding where they round (bitwise).
#include "ops/registry.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

constexpr int64_t kMaxHead = 1024;  // the CUDA kernel's row in shared memory

int64_t int_at(const Node* n, size_t i) {
  if (n->args.size() <= i || n->args[i].kind != Value::Kind::kInt) return INT64_MIN;
  return n->args[i].i;
}

// A transpose of two dims other than the last, or an alias: the last dim stays last.
bool keeps_last_dim(const Node* n, int64_t rank) {
  const std::string name = op_name(n);
  if (name == "alias") return n->args.size() == 1 && n->kwargs.empty();
  if (name != "transpose" || n->args.size() != 3 || !n->kwargs.empty()) return false;
  int64_t a = int_at(n, 1), b = int_at(n, 2);
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
        !norm->args[0].is_node() || !nm || nm->dim() != rm->dim() || nm->dtype() != rm->dtype())
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
};

}  // namespace

std::unique_ptr<Pass> make_fuse_head_norm_rotary_pass() {
  return std::make_unique<FuseHeadNormRotaryPass>();
}

}  // namespace inplace
