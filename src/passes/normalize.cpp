// normalize: placeholders come first; every call node becomes call_function on its canonical
// target
// ("aten.add.Tensor", "_operator.setitem"), with its arguments bound to the schema: positional
// parameters as args, keyword-only ones as kwargs, defaults filled in. Overloads are chosen
// with the shapes and dtypes known so far, so x.add(y) picks add.Tensor for a tensor y.
#include "passes/meta_inference.h"
#include "passes/op_info.h"

namespace inplace {

namespace {

const OpDef* choose_op(const Node& n, const MetaTable& metas) {
  std::vector<Value> args(n.args.size());
  std::vector<std::pair<std::string, Value>> kwargs;
  bool all = true;
  for (size_t i = 0; i < n.args.size(); ++i) all &= metas.substitute(n.args[i], &args[i]);
  for (const auto& [k, v] : n.kwargs) {
    Value m;
    all &= metas.substitute(v, &m);
    kwargs.emplace_back(k, m);
  }
  if (all) {
    try {
      return resolve_call(n.target, args, kwargs, n.name).op;
    } catch (const Error&) {
      // Fall back to binding the references as they are.
    }
  }
  return resolve_node(n).op;
}

// FX's order: placeholders first (in their order), so input i is the i-th node. A builder may
// put a get_attr before a placeholder; later passes append inputs after the last placeholder.
void placeholders_first(Graph& graph) {
  Node* first_other = nullptr;
  for (Node* n : graph.nodes()) {
    if (n->op != NodeOp::kPlaceholder) {
      if (!first_other) first_other = n;
      continue;
    }
    if (!first_other) continue;
    std::string name = n->name;
    Node* moved = graph.insert_before(first_other, NodeOp::kPlaceholder, n->target, n->args,
                                      n->kwargs, name + "_moved");
    moved->meta = n->meta;
    graph.replace_all_uses_with(n, moved);
    graph.erase(n);
    graph.rename(moved, name);
  }
}

// F.relu(x, inplace=True) (and every op with an `inplace` flag): the write depends on a flag
// that a schema cannot annotate, so the call becomes the in-place op it stands for (relu_),
// which the later passes see as a mutation. Returns whether the node was rewritten.
bool rewrite_inplace_flag(Node& n, const OpDef& op, const Args& bound) {
  const int flag = op.schema.index_of("inplace");
  if (flag < 0 || bound[flag].kind != Value::Kind::kBool || !bound[flag].b) return false;
  const std::string target = op.schema.name + "_";
  IP_CHECK(!Registry::get().overloads(target).empty(), kUnsupported, "[normalize] node '", n.name,
           "': '", n.target, "' with inplace=True needs the in-place op '", target,
           "', which is not supported");
  std::vector<Value> args;
  for (size_t i = 0; i < bound.size(); ++i)
    if (static_cast<int>(i) != flag && !op.schema.args[i].kwarg_only) args.push_back(bound[i]);
  n.op = NodeOp::kCallFunction;
  n.target = target;
  n.args = std::move(args);
  n.kwargs.clear();
  return true;
}

// builtins.getattr as torch.fx records attribute reads: x.topk(k).values, x.shape, x.ndim,
// x.mT become the ops the later passes model (getitem, size, dim, transpose). Other attributes
// stay getattr calls (dtype, device, T), which the interpreter evaluates.
void rewrite_getattr(Node& n) {
  if ((n.target != "builtins.getattr" && n.target != "getattr") || n.args.size() != 2 ||
      n.args[1].kind != Value::Kind::kString)
    return;
  const std::string attr = n.args[1].s;
  const Value self = n.args[0];
  if (attr == "values" || attr == "indices") {
    n.target = "_operator.getitem";
    n.args = {self, Value::integer(attr == "values" ? 0 : 1)};
  } else if (attr == "shape") {
    n.target = "aten.size.default";
    n.args = {self};
  } else if (attr == "ndim") {
    n.target = "aten.dim.default";
    n.args = {self};
  } else if (attr == "mT") {
    n.target = "aten.transpose.int";
    n.args = {self, Value::integer(-2), Value::integer(-1)};
  }
}

// A node whose value is a tuple or list (max.dim, sort, topk, unbind) returned as it is: each
// item becomes an output of its own through a getitem node, so the outputs are counted and
// ordered as eager flattens them (output.<i>), whatever path runs the graph.
void spread_sequence_outputs(Graph& graph, Node* out, Value& v, MetaTable& metas) {
  if (v.is_sequence()) {
    for (Value& item : v.items) spread_sequence_outputs(graph, out, item, metas);
    return;
  }
  if (!v.is_node()) return;
  const Value* m = metas.find(v.node);
  size_t count = 0;
  if (m && m->is_sequence()) {
    count = m->items.size();
  } else if (!m && v.node->is_call()) {
    const OpDef& op = *resolve_node(*v.node).op;
    if (op.schema.returns.size() > 1) count = op.schema.returns.size();
  }
  if (count == 0) return;
  const Value seq = m ? *m : Value::none();
  Node* source = v.node;
  std::vector<Value> items;
  for (size_t k = 0; k < count; ++k) {
    Node* g = graph.insert_before(out, NodeOp::kCallFunction, "_operator.getitem",
                                  {ref(source), Value::integer(static_cast<int64_t>(k))}, {},
                                  source->name + "_" + std::to_string(k));
    if (m) metas.set(g, seq.items[k]);
    items.push_back(ref(g));
  }
  v = Value::tuple(std::move(items));
  for (Value& item : v.items) spread_sequence_outputs(graph, out, item, metas);
}

class NormalizePass : public Pass {
 public:
  std::string name() const override { return "normalize"; }
  void run(Graph& graph, PassContext& ctx) override {
    placeholders_first(graph);
    const Registry& reg = Registry::get();
    MetaTable metas;
    for (Node* n : graph.nodes()) {
      if (n->is_call()) {
        rewrite_getattr(*n);
        if (reg.canonical_name(n->target, nullptr).empty()) {
          const std::string& t = n->target;
          IP_CHECK(!(t.size() > 1 && t.back() == '_' && t.rfind("__", 0) != 0), kUnsupported,
                   "[normalize] node '", n->name, "': in-place op '", t,
                   "' is not supported: it is not a known op");
          IP_FAIL(kUnsupported, "[normalize] node '", n->name, "': unknown op '", t, "'");
        }
        const OpDef* op = choose_op(*n, metas);
        Args bound;
        std::string why;
        IP_CHECK(bind_args(op->schema, n->args, n->kwargs, &bound, &why), kInvalidArgument,
                 "[normalize] node '", n->name, "': arguments do not fit '", op->schema.to_string(),
                 "': ", why);
        if (rewrite_inplace_flag(*n, *op, bound)) {
          op = choose_op(*n, metas);
          IP_CHECK(bind_args(op->schema, n->args, n->kwargs, &bound, &why), kInvalidArgument,
                   "[normalize] node '", n->name, "': arguments do not fit '",
                   op->schema.to_string(), "': ", why);
        }
        std::vector<Value> args;
        std::vector<std::pair<std::string, Value>> kwargs;
        for (size_t i = 0; i < bound.size(); ++i) {
          if (op->schema.args[i].kwarg_only)
            kwargs.emplace_back(op->schema.args[i].name, bound[i]);
          else
            args.push_back(bound[i]);
        }
        n->op = NodeOp::kCallFunction;
        n->target = canonical_target(*op);
        n->args = std::move(args);
        n->kwargs = std::move(kwargs);
      }
      if (n->op == NodeOp::kOutput)
        for (Value& a : n->args) spread_sequence_outputs(graph, n, a, metas);
      std::optional<Value> m = infer_node_meta(graph, *n, metas, ctx.options);
      if (m) metas.set(n, std::move(*m));
    }
    annotate_metas(graph, metas);
  }
};

}  // namespace

std::unique_ptr<Pass> make_normalize_pass() {
  return std::make_unique<NormalizePass>();
}

}  // namespace inplace
