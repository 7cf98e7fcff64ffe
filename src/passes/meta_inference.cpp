#include "passes/meta_inference.h"

#include <cstring>
#include <unordered_set>

#include "passes/op_info.h"
#include "passes/view_rules.h"

namespace inplace {

const Value* MetaTable::find(const Node* n) const {
  auto it = values_.find(n);
  return it == values_.end() ? nullptr : &it->second;
}

std::optional<Value> MetaTable::take(const Node* n) {
  auto it = values_.find(n);
  if (it == values_.end()) return std::nullopt;
  std::optional<Value> v(std::move(it->second));
  values_.erase(it);
  return v;
}

const Tensor* MetaTable::tensor(const Node* n) const {
  const Value* v = find(n);
  return v && v->is_tensor() ? &v->tensor : nullptr;
}

bool MetaTable::substitute(const Value& v, Value* out) const {
  if (v.is_node()) {
    const Value* m = find(v.node);
    if (!m) return false;
    *out = *m;
    return true;
  }
  *out = v;
  for (Value& item : out->items)
    if (!substitute(Value(item), &item)) return false;
  return true;
}

std::optional<Value> placeholder_meta(const Node& n, const PassOptions& options) {
  const Meta* m = &n.meta;
  auto it = options.input_metas.find(n.name);
  if (!(m->shape && m->dtype) && it != options.input_metas.end()) m = &it->second;
  if (m->shape && m->dtype) return Value::from_tensor(Tensor::meta(*m->shape, *m->dtype));
  if (!n.args.empty() && !n.args[0].is_node()) {
    const Value& d = n.args[0];
    if (d.is_tensor()) return Value::from_tensor(Tensor::meta(d.tensor.shape(), d.tensor.dtype()));
    return d;
  }
  return std::nullopt;
}

namespace {

// Replaces every 1-element integer meta that `op` reads as an int (an int argument, a getitem
// index entry or slice bound) by `v`; false when there is none.
bool set_runtime_ints(const OpDef& op, Value& v, const std::string& type, bool in_index, int64_t x,
                      bool* any) {
  if (v.is_tensor() && v.tensor.is_meta() && v.tensor.numel() == 1 &&
      !is_floating(v.tensor.dtype()) && v.tensor.dtype() != DType::kBool &&
      (type == "int" || type == "SymInt" || (in_index && v.tensor.dim() == 0))) {
    v = Value::integer(x);
    *any = true;
    return true;
  }
  bool slice = v.kind == Value::Kind::kSlice;
  for (Value& item : v.items)
    set_runtime_ints(op, item, slice ? "int" : type, in_index && v.kind != Value::Kind::kList, x,
                     any);
  return *any;
}

// The meta of an op at a runtime position (x.select(0, pos), x[n], select_scatter at pos) when
// its shape does not depend on the position: the op's metas at two positions, compared.
std::optional<Value> at_runtime_position(const OpDef& op, const Args& args) {
  // slice_scatter / select_scatter at runtime bounds: the result has self's shape.
  const std::string& name = op.schema.name;
  if (name.size() > 8 && name.compare(name.size() - 8, 8, "_scatter") == 0 && args[0].is_tensor())
    return Value::from_tensor(Tensor::meta(args[0].tensor.shape(), args[0].tensor.dtype()));
  // Positions that are valid for some tensors and not others: every value that works must
  // give the same shape.
  std::optional<Value> first;
  for (int64_t x : {0, 1, 2, 3, -1, -2, -3}) {
    Args a = args;
    bool any = false;
    for (size_t i = 0; i < a.size() && i < op.schema.args.size(); ++i)
      set_runtime_ints(op, a[i], op.schema.args[i].base_type(),
                       op.schema.name == "getitem" && i == 1, x, &any);
    if (!any) return std::nullopt;
    Value r;
    try {
      r = op.infer ? pack_results(op.schema, op.infer(a)) : op.eager(a);
    } catch (const std::exception&) {
      continue;
    }
    if (!r.is_tensor()) return std::nullopt;
    if (!first) {
      first = r;
    } else if (first->tensor.shape() != r.tensor.shape() ||
               first->tensor.strides() != r.tensor.strides()) {
      return std::nullopt;
    }
  }
  return first;
}

// The size of the last dim of `v`'s tensor: its meta's, or, for a getitem that only slices
// leading dims of a known tensor (a cache's filled prefix, cache[:, :, :end]), the base's.
std::optional<int64_t> last_dim(const Value& v, const MetaTable& table) {
  if (!v.is_node()) return std::nullopt;
  if (const Tensor* t = table.tensor(v.node)) {
    if (t->dim() == 0) return std::nullopt;
    return t->size(-1);
  }
  const Node* n = v.node;
  ResolvedCall rc;
  try {
    rc = resolve_node(*n);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (rc.op->schema.name != "getitem" || rc.args.size() != 2 || !rc.args[0].is_node())
    return std::nullopt;
  const Tensor* base = table.tensor(rc.args[0].node);
  const Value& index = rc.args[1];
  if (!base || !index.is_sequence() || static_cast<int64_t>(index.items.size()) >= base->dim())
    return std::nullopt;
  for (const Value& item : index.items)
    if (item.kind != Value::Kind::kSlice) return std::nullopt;
  return base->size(-1);
}

// scaled_dot_product_attention whose keys and values have a runtime extent (the filled prefix
// of a cache): the result is [..., L, Ev] from the query and the values' last dim whatever
// the extent, so the ops after attention keep their metas (and the passes that need them).
std::optional<Value> attention_meta(const Args& args, const MetaTable& table) {
  if (args.size() < 3 || !args[0].is_node()) return std::nullopt;
  const Tensor* q = table.tensor(args[0].node);
  std::optional<int64_t> ev = last_dim(args[2], table);
  if (!q || q->dim() < 2 || !ev) return std::nullopt;
  Shape shape = q->shape();
  shape.back() = *ev;
  return Value::from_tensor(Tensor::meta(shape, q->dtype()));
}

std::optional<Value> call_meta(const Node& node, const MetaTable& table) {
  ResolvedCall rc;
  try {
    rc = resolve_node(node);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const OpDef& op = *rc.op;
  const std::string& name = op.schema.name;
  // getitem on a list or tuple (the pieces of split, the results of max.dim).
  if (name == "getitem" && rc.args.size() == 2 && rc.args[0].is_node()) {
    const Value* c = table.find(rc.args[0].node);
    if (c && c->is_sequence() && rc.args[1].kind == Value::Kind::kInt) {
      int64_t k = rc.args[1].i, size = static_cast<int64_t>(c->items.size());
      if (k < 0) k += size;
      if (k >= 0 && k < size) return c->items[k];
      return std::nullopt;
    }
  }
  if (op.kind == OpKind::kMutating) {
    // In-place ops return (an alias of) what they write.
    if (op.schema.returns.empty()) return Value::none();
    int a = op.schema.aliased_arg_of_return(0);
    if (a < 0 || op.schema.returns.size() != 1) return std::nullopt;
    Value m;
    if (!table.substitute(rc.args[a], &m)) return std::nullopt;
    return m;
  }
  ViewRule rule = view_rule(node, op, rc.args, table);
  if (rule.kind == ViewRule::Kind::kCopy && rule.result_meta)
    return Value::from_tensor(*rule.result_meta);
  Args args(rc.args.size());
  bool known = true;
  for (size_t i = 0; i < rc.args.size(); ++i) known &= table.substitute(rc.args[i], &args[i]);
  try {
    if (rule.kind == ViewRule::Kind::kView && !rule.steps.empty() && known &&
        args[rule.parent_arg].is_tensor()) {
      Tensor t = args[rule.parent_arg].tensor;
      for (const ViewStep& s : rule.steps) t = apply_step(t, s);
      return Value::from_tensor(t);
    }
    if (!known && is_attention(&node)) return attention_meta(rc.args, table);
    if (!known) return std::nullopt;
    if (op.infer) {
      std::vector<Tensor> metas = op.infer(args);
      return pack_results(op.schema, std::move(metas));
    }
    // Views work on metas; so do ops that return shapes and other non-tensors (size, dim).
    if (op.kind == OpKind::kView || rule.kind == ViewRule::Kind::kContainer ||
        (!op.schema.returns.empty() && op.schema.returns[0].type != "Tensor" &&
         op.schema.returns[0].type != "Tensor[]"))
      return op.eager(args);
  } catch (const std::exception&) {
    if (known && (op.kind == OpKind::kView || op.infer)) return at_runtime_position(op, args);
  }
  return std::nullopt;
}

}  // namespace

std::optional<Value> infer_node_meta(const Graph& graph, const Node& node, const MetaTable& table,
                                     const PassOptions& options) {
  switch (node.op) {
    case NodeOp::kPlaceholder:
      return placeholder_meta(node, options);
    case NodeOp::kGetAttr: {
      auto it = graph.constants.find(node.target);
      if (it == graph.constants.end()) return std::nullopt;
      return Value::from_tensor(Tensor::meta(it->second.shape(), it->second.dtype()));
    }
    case NodeOp::kCallFunction:
    case NodeOp::kCallMethod:
      return call_meta(node, table);
    case NodeOp::kOutput:
      return std::nullopt;
  }
  return std::nullopt;
}

MetaTable infer_metas(const Graph& graph, const PassOptions& options) {
  MetaTable table;
  for (Node* n : graph.nodes()) {
    std::optional<Value> m = infer_node_meta(graph, *n, table, options);
    if (m) table.set(n, std::move(*m));
  }
  return table;
}

void annotate_metas(Graph& graph, const MetaTable& table) {
  for (Node* n : graph.nodes()) {
    const Tensor* t = table.tensor(n);
    if (!t) continue;
    if (!n->meta.shape) n->meta.shape = t->shape();
    if (!n->meta.dtype) n->meta.dtype = t->dtype();
  }
}

namespace {

// What a node's meta is inferred from, hashed; the nodes it reads are noted in `inputs`.
class Stamp {
 public:
  void add(uint64_t x) { h_ = (h_ ^ x) * 0x100000001b3ull + (h_ >> 29); }
  void add(const std::string& s) {
    add(std::hash<std::string>()(s));
    add(s.size());
  }
  void add(const Shape& shape) {
    add(shape.size());
    for (int64_t d : shape) add(static_cast<uint64_t>(d));
  }
  void add(const Value& v, std::vector<const Node*>* inputs) {
    add(static_cast<uint64_t>(v.kind));
    switch (v.kind) {
      case Value::Kind::kBool:
        add(v.b);
        break;
      case Value::Kind::kInt:
        add(static_cast<uint64_t>(v.i));
        break;
      case Value::Kind::kFloat: {
        uint64_t bits;
        std::memcpy(&bits, &v.f, sizeof bits);
        add(bits);
        break;
      }
      case Value::Kind::kString:
      case Value::Kind::kDevice:
        add(v.s);
        break;
      case Value::Kind::kNode:
        add(reinterpret_cast<uintptr_t>(v.node));
        inputs->push_back(v.node);
        break;
      case Value::Kind::kDType:
        add(static_cast<uint64_t>(v.dtype));
        break;
      case Value::Kind::kTensor:
        add(static_cast<uint64_t>(v.tensor.dtype()));
        add(v.tensor.shape());
        add(v.tensor.strides());
        add(v.tensor.is_meta() ? 0 : reinterpret_cast<uintptr_t>(v.tensor.data_ptr()));
        break;
      default:
        break;
    }
    add(v.items.size());
    for (const Value& item : v.items) add(item, inputs);
    for (const std::string& k : v.keys) add(k);
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

// Whether two metas are the same: then the nodes that read one read the other alike.
bool same_meta(const Value& a, const Value& b) {
  if (a.kind != b.kind || a.b != b.b || a.i != b.i || a.s != b.s || a.node != b.node ||
      a.dtype != b.dtype || a.items.size() != b.items.size() || a.keys != b.keys)
    return false;
  if (std::memcmp(&a.f, &b.f, sizeof a.f) != 0) return false;
  if (a.kind == Value::Kind::kTensor) {
    const Tensor &x = a.tensor, &y = b.tensor;
    if (x.defined() != y.defined()) return false;
    if (x.defined() &&
        (x.dtype() != y.dtype() || x.shape() != y.shape() || x.strides() != y.strides() ||
         x.offset() != y.offset() || x.is_meta() != y.is_meta() ||
         (!x.is_meta() && x.data_ptr() != y.data_ptr())))
      return false;
  }
  for (size_t k = 0; k < a.items.size(); ++k)
    if (!same_meta(a.items[k], b.items[k])) return false;
  return true;
}

uint64_t stamp_of(const Graph& graph, const Node& n, std::vector<const Node*>* inputs) {
  Stamp s;
  s.add(static_cast<uint64_t>(n.op));
  s.add(n.target);
  s.add(n.name);
  for (const Value& v : n.args) s.add(v, inputs);
  for (const auto& [key, v] : n.kwargs) {
    s.add(key);
    s.add(v, inputs);
  }
  if (n.op == NodeOp::kPlaceholder) {  // the only node kind whose meta is read
    s.add(n.meta.shape ? *n.meta.shape : Shape{-1});
    s.add(n.meta.dtype ? static_cast<uint64_t>(*n.meta.dtype) + 1 : 0);
  } else if (n.op == NodeOp::kGetAttr) {
    auto c = graph.constants.find(n.target);
    if (c != graph.constants.end()) {
      s.add(c->second.shape());
      s.add(static_cast<uint64_t>(c->second.dtype()) + 1);
    }
  }
  return s.value();
}

}  // namespace

MetaTable& MetaCache::refresh(const Graph& graph, const PassOptions& options) {
  MetaTable next;
  std::unordered_map<const Node*, uint64_t> stamps;
  stamps.reserve(stamps_.size());
  // Nodes inferred again this refresh whose meta changed, or is new or unknown: their readers
  // are inferred again too.
  std::unordered_set<const Node*> changed;
  std::vector<const Node*> inputs;
  for (Node* n : graph.nodes()) {
    inputs.clear();
    const uint64_t stamp = stamp_of(graph, *n, &inputs);
    auto it = stamps_.find(n);
    const bool known = it != stamps_.end();
    bool keep = known && it->second == stamp;
    for (size_t k = 0; keep && k < inputs.size(); ++k)
      keep = stamps.count(inputs[k]) && !changed.count(inputs[k]);
    std::optional<Value> old = table_.take(n);
    if (keep) {
      if (old) next.set(n, std::move(*old));
    } else {
      ++inferred_;
      std::optional<Value> m = infer_node_meta(graph, *n, next, options);
      // An unknown meta counts as changed: attention's rule reads through a getitem without one.
      if (!known || !old || !m || !same_meta(*old, *m)) changed.insert(n);
      if (m) next.set(n, std::move(*m));
    }
    stamps[n] = stamp;
  }
  table_ = std::move(next);
  stamps_ = std::move(stamps);
  return table_;
}

MetaTable& cached_metas(const Graph& graph, PassContext& ctx) {
  if (!ctx.meta_cache) ctx.meta_cache = std::make_shared<MetaCache>();
  return ctx.meta_cache->refresh(graph, ctx.options);
}

bool backend_runs(const MetaTable& metas, const std::string& op, const std::vector<Value>& args,
                  const PassOptions& options) {
  const OpDef* def = Registry::get().find(op);
  Value bound;
  if (!def || !metas.substitute(Value::list(args), &bound)) return false;
  try {
    def->infer(bound.items);
  } catch (const Error&) {
    return false;
  }
  return !options.kernel_supports || options.kernel_supports(*def, bound.items).empty();
}

}  // namespace inplace
