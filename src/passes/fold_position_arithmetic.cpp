// fold_position_arithmetic (an engine pass, optional rewrite): the integer arithmetic torch.export
// records around one decode position is a view of the position. Hugging Face's static-cache
// decoders compute `arange(1) + cumulative_length` (the buffer just copied from
// `cache_position[0]`), casts of it and copies, once per layer: through the generic path each is a
// step (15 `arange` launches and their adds a call on a 12-layer Llama). Each one-element int64
// value that trace_position proves equal to an input's element (offset 0), read only by calls, is
// that element viewed in its shape: no step at all, the same value (exact: integer arithmetic).
// Likewise `x + 0` of an integer tensor (the causal mask's `arange(s_max) + 0`) is x. The input
// must not be mutated by the program (a view of it would see the write).
#include <set>

#include "passes/engine_passes.h"
#include "passes/meta_inference.h"
#include "passes/op_info.h"
#include "passes/position_trace.h"

namespace inplace {

namespace {

bool readers_are_calls(const Graph& g, const Node* n) {
  const std::vector<Node*> users = g.users(n);
  for (const Node* u : users)
    if (!u->is_call()) return false;
  return !users.empty();
}

bool is_integer(DType t) {
  return t == DType::kInt64 || t == DType::kInt32 || t == DType::kInt16 || t == DType::kInt8 ||
         t == DType::kUInt8;
}

// add(x, 0) / add(0, x) / sub(x, 0) with alpha 1 (or absent).
Node* plus_zero(const Node* n) {
  const std::string op = op_name(n);
  if ((op != "add" && op != "sub") || n->args.size() != 2) return nullptr;
  for (const auto& [k, v] : n->kwargs)
    if (k != "alpha" || !(v.kind == Value::Kind::kInt && v.i == 1)) return nullptr;
  const Value &a = n->args[0], &b = n->args[1];
  auto zero = [](const Value& v) { return v.kind == Value::Kind::kInt && v.i == 0; };
  if (a.is_node() && zero(b)) return a.node;
  if (op == "add" && b.is_node() && zero(a)) return b.node;
  return nullptr;
}

// The position arithmetic a fold leaves unread: the node and, in turn, its operands that only it
// read (arange, adds, casts, copies, views of the position), never a placeholder.
void erase_unread(Graph& g, Node* n) {
  static const std::set<std::string> kPure = {
      "arange", "add",     "sub",     "to",     "_to_copy", "copy",   "clone",       "unsqueeze",
      "view",   "reshape", "squeeze", "expand", "alias",    "select", "_unsafe_view"};
  std::vector<Node*> work = {n};
  std::set<Node*> erased;
  while (!work.empty()) {
    Node* x = work.back();
    work.pop_back();
    if (erased.count(x) || !x->is_call() || !g.users(x).empty() || !kPure.count(op_name(x)))
      continue;
    std::vector<Node*> ins = x->inputs();
    g.erase(x);
    erased.insert(x);
    for (Node* in : ins) work.push_back(in);
  }
}

class FoldPositionArithmeticPass : public Pass {
 public:
  std::string name() const override { return "fold_position_arithmetic"; }
  void run(Graph& g, PassContext& ctx) override {
    MetaTable& metas = cached_metas(g, ctx);
    std::set<std::string> mutated;
    for (const Mutation& m : ctx.mutations)
      if (m.input >= 0 && static_cast<size_t>(m.input) < ctx.input_names.size())
        mutated.insert(ctx.input_names[m.input]);
    for (Node* n : g.nodes()) {
      const std::string op = op_name(n);
      if (op != "add" && op != "sub" && op != "to" && op != "_to_copy" && op != "copy" &&
          op != "clone")
        continue;
      if (!readers_are_calls(g, n)) continue;
      const Tensor* nm = metas.tensor(n);
      if (!nm) continue;
      if (Node* x = plus_zero(n)) {
        const Tensor* xm = metas.tensor(x);
        if (xm && is_integer(nm->dtype()) && xm->dtype() == nm->dtype() &&
            xm->shape() == nm->shape()) {
          g.replace_all_uses_with(n, x);
          erase_unread(g, n);
          continue;
        }
      }
      std::optional<PositionValue> p = trace_position(metas, n);
      if (!p || p->offset != 0) continue;
      Node* input = p->core->op == NodeOp::kPlaceholder ? p->core : p->core->args[0].node;
      if (mutated.count(input->name)) continue;
      const Tensor* cm = metas.tensor(p->core);
      if (!cm || cm->dtype() != nm->dtype()) continue;
      Node* value = p->core;
      if (cm->shape() != nm->shape()) {
        value = g.insert_before(n, NodeOp::kCallFunction, "aten.view.default",
                                {Value::node_ref(p->core), Value::int_list(nm->shape())}, {},
                                n->name + "_position");
        value->meta = n->meta;
      }
      g.replace_all_uses_with(n, value);
      erase_unread(g, n);
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_position_arithmetic_pass() {
  return std::make_unique<FoldPositionArithmeticPass>();
}

}  // namespace inplace
