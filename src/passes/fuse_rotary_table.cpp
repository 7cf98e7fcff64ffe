// fuse_rotary_table (an engine pass, after outer_product_matmul): Hugging Face's rotary embedding
// module computes its tables each call from the positions,
//   freqs = (inv_freq[None, :, None] @ position_ids[:, None, :].float()).transpose(1, 2)
//   emb = cat(freqs, freqs, -1)
//   cos = (emb.cos() * attention_scaling).to(dtype); sin = (emb.sin() *
//   attention_scaling).to(dtype)
// which after outer_product_matmul is mul(inv_freq, positions) + 0, a transpose, a cat and one
// chain each for cos and sin: on a GPU three launches (a product, a copy, a pair of programs)
// before the first layer. Each cos or sin chain becomes one rotary_table(inv_freq, positions,
// sine, dtype) step (ops/rotary_table_ops.cpp), and the two are one launch as a pair: exact, the
// op's kernels use each backend's own arithmetic for every step of the chain.
// Matched: cat([t, t], -1) of t = transpose(mul(a, b) + 0, 1, 2), a float32 [B1, h, 1] and b
// float32 [B2, 1, S] (or a cast of an integer tensor to float32, which the op converts itself);
// cos or sin of the cat, then optionally * 1 (attention_scaling 1.0) and a cast to float32,
// bfloat16 or float16; each link read by the next alone. Another scaling (YaRN's) stays a step
// after a float32 table, with the cast after it. The cat, transpose and product go once no other
// step reads them.
#include "ops/rotary_table_args.h"
#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

bool only_user(const Graph& g, const Node* n, const Node* user) {
  for (const Node* u : g.users(n))
    if (u != user) return false;
  return true;
}

bool is_number(const Value& v, double want) {
  return !v.is_node() && v.is_number() && v.as_double("fuse_rotary_table") == want;
}

bool is_cast(const Node* n) {
  const std::string op = op_name(n);
  return (op == "to" || op == "_to_copy") && !n->args.empty() && n->args[0].is_node();
}

// t = transpose(x, 1, 2) of a 3-D x (either order, negative dims too): x, else null.
Node* transposed(const Node* t) {
  if (op_name(t) != "transpose" || t->args.size() != 3 || !t->args[0].is_node() ||
      t->args[1].kind != Value::Kind::kInt || t->args[2].kind != Value::Kind::kInt)
    return nullptr;
  const int64_t a = t->args[1].i, b = t->args[2].i;
  if (a < -3 || a > 2 || b < -3 || b > 2) return nullptr;
  const int64_t da = (a + 3) % 3, db = (b + 3) % 3;
  return (da == 1 && db == 2) || (da == 2 && db == 1) ? t->args[0].node : nullptr;
}

struct Product {
  Node* inv = nullptr;        // float32 [B1, h, 1]
  Node* positions = nullptr;  // [B2, 1, S], float32 or an integer dtype
};

// p = mul(a, b) + 0 with a [B1, h, 1] and b [B2, 1, S] float32 (in either order).
bool product_of(const Graph& g, const MetaTable& metas, Node* p, Node* reader, Product* out) {
  if (op_name(p) != "add" || p->args.size() != 2 || !p->kwargs.empty() || !p->args[0].is_node() ||
      !is_number(p->args[1], 0.0) || !only_user(g, p, reader))
    return false;
  Node* m = p->args[0].node;
  if (op_name(m) != "mul" || m->args.size() != 2 || !m->args[0].is_node() ||
      !m->args[1].is_node() || !only_user(g, m, p))
    return false;
  for (int first = 0; first < 2; ++first) {
    Node* a = m->args[first].node;
    Node* b = m->args[1 - first].node;
    const Tensor* am = metas.tensor(a);
    const Tensor* bm = metas.tensor(b);
    if (!am || !bm || am->dtype() != DType::kFloat32 || bm->dtype() != DType::kFloat32 ||
        am->dim() != 3 || bm->dim() != 3 || am->size(2) != 1 || bm->size(1) != 1)
      continue;
    out->inv = a;
    out->positions = b;
    // An integer tensor cast to float32: the op converts it as the cast does.
    if (is_cast(b)) {
      const Tensor* src = metas.tensor(b->args[0].node);
      if (src && src->shape() == bm->shape() && is_integral(src->dtype(), false) &&
          rotary_table::takes_positions(src->dtype()))
        out->positions = b->args[0].node;
    }
    return true;
  }
  return false;
}

class FuseRotaryTablePass : public Pass {
 public:
  std::string name() const override { return "fuse_rotary_table"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable& metas = cached_metas(g, ctx);
    std::vector<Node*> cats;
    for (Node* n : g.nodes())
      if (op_name(n) == "cat") cats.push_back(n);
    for (Node* cat : cats) {
      if (cat->args.empty() || !cat->args[0].is_sequence() || cat->args[0].items.size() != 2 ||
          !cat->args[0].items[0].is_node() || !cat->args[0].items[1].is_node() ||
          cat->args[0].items[0].node != cat->args[0].items[1].node)
        continue;
      Node* t = cat->args[0].items[0].node;
      const Tensor* tm = metas.tensor(t);
      const int64_t dim = cat->args.size() > 1 && cat->args[1].kind == Value::Kind::kInt
                              ? cat->args[1].i
                              : (cat->args.size() > 1 ? INT64_MIN : 0);
      if (!tm || tm->dim() != 3 || tm->dtype() != DType::kFloat32 || (dim != -1 && dim != 2) ||
          !only_user(g, t, cat))
        continue;
      Node* p = transposed(t);
      Product prod;
      if (!p || !product_of(g, metas, p, t, &prod)) continue;
      for (Node* u : g.users(cat)) fuse_chain(g, metas, u, prod);
      if (g.users(cat).empty()) {
        Node* m = p->args[0].node;
        std::vector<Node*> operands = {m->args[0].node, m->args[1].node};
        g.erase_all({cat, t, p, m});
        // The positions' cast, when the table converts them itself and nothing else reads it.
        for (Node* o : operands)
          if (o != prod.positions && o != prod.inv && is_cast(o) && g.users(o).empty()) g.erase(o);
      }
    }
  }

 private:
  // u = cos(cat) or sin(cat), then * 1 and a cast: the chain's last node becomes one step.
  static void fuse_chain(Graph& g, MetaTable& metas, Node* u, const Product& prod) {
    const std::string op = op_name(u);
    if ((op != "cos" && op != "sin") || u->args.size() != 1) return;
    std::vector<Node*> chain = {u};
    auto next = [&](Node* n) -> Node* {
      const std::vector<Node*> users = g.users(n);
      return users.size() == 1 && users[0]->is_call() ? users[0] : nullptr;
    };
    Node* end = u;
    // * 1.0 joins the table; another scaling stays a step of its own after it (its rounding,
    // and the cast after it, are the chain's).
    if (Node* m = next(end); m && op_name(m) == "mul" && m->args.size() == 2 && m->kwargs.empty() &&
                             m->args[0].is_node() && m->args[0].node == end &&
                             is_number(m->args[1], 1.0)) {
      chain.push_back(m);
      end = m;
    }
    if (Node* c = next(end); c && is_cast(c) && c->args[0].node == end) {
      const Tensor* cm = metas.tensor(c);
      if (cm && rotary_table::takes_result(cm->dtype())) {
        chain.push_back(c);
        end = c;
      }
    }
    const Tensor* em = metas.tensor(end);
    if (!em || !rotary_table::takes_result(em->dtype())) return;
    Node* table = g.insert_before(end, NodeOp::kCallFunction, "inplace.rotary_table",
                                  {Value::node_ref(prod.inv), Value::node_ref(prod.positions),
                                   Value::boolean(op == "sin"), Value::dtype_value(em->dtype())},
                                  {}, end->name + "_table");
    table->meta = end->meta;
    metas.set(table, Value::from_tensor(*em));
    g.replace_all_uses_with(end, table);
    g.erase_all(chain);
  }
};

}  // namespace

std::unique_ptr<Pass> make_fuse_rotary_table_pass() {
  return std::make_unique<FuseRotaryTablePass>();
}

}  // namespace inplace
