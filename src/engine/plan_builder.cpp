// The plan builder: walks the functional graph over tensor metadata — no kernel runs and no
// weight is copied — and turns every node that computes into a step whose operands are resolved
// to (buffer, offset, shape, strides). Views cost no step. Values read from integer inputs and
// the integer arithmetic on them become runtime scalars; every size, offset or bound that
// depends on one is recomputed per call by the refresh. See Note [Runtime values] in
// docs/engine.md.
#include <deque>
#include <map>
#include <unordered_map>

#include "engine/build_state.h"
#include "engine/plan_values.h"
#include "ops/index_spec.h"

namespace inplace {

namespace {

constexpr int64_t kTensorMark = int64_t{1} << 60;             // meta offsets that name leaves
constexpr int64_t kIntMark = INT64_MIN + (int64_t{1} << 40);  // ints that name runtime scalars

// What a tensor passed for an argument of this type stands for: an int the op reads (a size,
// a dim, an index), a number that may equally be read at run time (fill values, Scalar
// operands), or a tensor.
enum class Position : uint8_t { kTensor, kInt, kNumber };
Position position_of(const ArgSpec& a) {
  std::string t = a.base_type();
  if (t == "int" || t == "SymInt" || t == "int[]" || t == "SymInt[]") return Position::kInt;
  if (t == "Scalar" || t == "bool" || t == "float" || t == "number") return Position::kNumber;
  return Position::kTensor;
}

class PlanBuilder {
 public:
  explicit PlanBuilder(BuildState& st) : values_(st) {}

  void run(const Graph& graph, const std::vector<Tensor>& examples) {
    std::vector<Node*> placeholders = graph.placeholders();
    IP_CHECK(examples.size() == placeholders.size(), kInvalidArgument, "[compile] graph '",
             graph.name, "' has ", placeholders.size(), " inputs but ", examples.size(),
             " example inputs were given");
    size_t k = 0;
    for (Node* n : graph.nodes()) {
      switch (n->op) {
        case NodeOp::kPlaceholder:
          env_[n] = values_.add_input(n->name, examples[k++]);
          break;
        case NodeOp::kGetAttr: {
          auto it = graph.constants.find(n->target);
          IP_CHECK(it != graph.constants.end(), kNotFound, "[compile] node '", n->name,
                   "' reads unknown attribute '", n->target, "'");
          env_[n] = values_.constant(it->second, n->target);
          break;
        }
        case NodeOp::kCallFunction:
        case NodeOp::kCallMethod:
          env_[n] = call(n);
          break;
        case NodeOp::kOutput:
          outputs(n);
          break;
      }
    }
  }

 private:
  // Node references replaced by their values; tensor leaves become metas whose offset names
  // the leaf (kTensorMark + k) and runtime ints become kIntMark + scalar, so that after the
  // arguments are bound to a schema every leaf can be traced back.
  Value marked(const Value& v) {
    if (v.is_node()) {
      auto it = env_.find(v.node);
      IP_ASSERT(it != env_.end(), "nodes are built in order");
      return marked_value(it->second);
    }
    Value r = v;
    for (Value& x : r.items) x = marked(x);
    return r;
  }
  Value marked_value(const BVal& b) {
    if (b.v.is_tensor()) {
      leaves_.push_back(&b);
      const Tensor& t = b.v.tensor;
      return Value::from_tensor(
          Tensor::meta(t.shape(), t.dtype(), t.strides(),
                       kTensorMark + static_cast<int64_t>(leaves_.size() - 1)));
    }
    if (b.sym >= 0) return Value::integer(kIntMark + b.sym);
    Value r = b.v;
    for (size_t i = 0; i < b.items.size() && i < r.items.size(); ++i)
      r.items[i] = marked_value(b.items[i]);
    return r;
  }

  // Restores the leaves of a bound argument: tensors to their metas (recording operands and
  // runtime ints), marked ints to their example values.
  void unmark(Value& v, std::vector<int>& path, Position position, bool in_slice, CallInfo& ci) {
    if (v.is_tensor() && v.tensor.is_meta() && v.tensor.offset() >= kTensorMark) {
      const BVal& b = *leaves_[v.tensor.offset() - kTensorMark];
      const Tensor& t = b.v.tensor;
      bool as_int =
          position == Position::kInt || in_slice ||
          (ci.index_arg && t.dim() == 0 && !is_floating(t.dtype()) && t.dtype() != DType::kBool);
      // A number argument is a runtime scalar when it can be one (arange's end), else a tensor
      // the kernel reads on every call (a fill value).
      if (position == Position::kNumber)
        as_int = t.numel() == 1 && !is_floating(t.dtype()) &&
                 (b.sym >= 0 || (b.buffer.kind == BufferKind::kInput && b.dyn < 0));
      if (as_int) {
        int32_t s = values_.scalar_of(b, ci.node->name, ci.arg_name);
        ci.ints.push_back({path, s});
        v = Value::integer(values_.example_value(s));
        return;
      }
      v = b.v;
      ci.tensors.push_back({path, values_.ref_of(b)});
      ci.dyn_input |= b.dyn >= 0;
      ci.inputs.push_back(&b);
      return;
    }
    if (v.kind == Value::Kind::kInt && v.i >= kIntMark && v.i < kIntMark + (int64_t{1} << 30)) {
      int32_t s = static_cast<int32_t>(v.i - kIntMark);
      ci.ints.push_back({path, s});
      v = Value::integer(values_.example_value(s));
      return;
    }
    bool slice = v.kind == Value::Kind::kSlice;
    for (size_t i = 0; i < v.items.size(); ++i) {
      path.push_back(static_cast<int>(i));
      unmark(v.items[i], path, position, in_slice || slice, ci);
      path.pop_back();
    }
  }

  BVal call(Node* n) {
    leaves_.clear();
    std::vector<Value> args;
    for (const Value& a : n->args) args.push_back(marked(a));
    std::vector<std::pair<std::string, Value>> kwargs;
    for (const auto& [k, v] : n->kwargs) kwargs.emplace_back(k, marked(v));
    ResolvedCall rc = resolve_call(n->target, args, kwargs, n->name);
    const OpDef* op = rc.op;
    const std::string& name = op->schema.name;
    IP_CHECK(!op->dynamic_shape, kUnsupported, "[compile] node '", n->name, "': op '",
             op->schema.full_name(),
             "' has a data-dependent shape with no bound; compiled engines need shapes that "
             "metadata and runtime scalars determine");
    IP_CHECK(op->kind != OpKind::kMutating, kUnsupported, "[compile] node '", n->name, "': op '",
             op->schema.full_name(),
             "' mutates its input; run the functionalization passes before building an engine");
    if (name == "getitem" && rc.args.size() == 2 && rc.args[0].is_sequence())
      return sequence_item(n, rc.args[0], rc.args[1]);
    CallInfo ci;
    ci.node = n;
    ci.op = op;
    for (size_t i = 0; i < rc.args.size(); ++i) {
      const ArgSpec& spec = op->schema.args[i];
      ci.arg_name = spec.name;
      ci.index_arg = name == "getitem" && i == 1;  // x[n] with a 0-dim integer n is x.select
      std::vector<int> path{static_cast<int>(i)};
      size_t before = ci.ints.size();
      unmark(rc.args[i], path, position_of(spec), false, ci);
      for (size_t k = before; k < ci.ints.size(); ++k) ci.int_args.push_back(spec.name);
    }
    ci.args = std::move(rc.args);
    return values_.evaluate(ci);
  }

  // x[k] on a list or tuple (the pieces of split, the results of topk, a size list).
  BVal sequence_item(const Node* n, const Value& seq, const Value& index) {
    IP_CHECK(index.kind == Value::Kind::kInt &&
                 !(index.i >= kIntMark && index.i < kIntMark + (int64_t{1} << 30)),
             kUnsupported, "[compile] node '", n->name,
             "': a list indexed at a runtime position is not supported");
    const int64_t size = static_cast<int64_t>(seq.items.size());
    int64_t k = index.i < 0 ? index.i + size : index.i;
    IP_CHECK(k >= 0 && k < size, kOutOfRange, "[compile] node '", n->name, "': index ", index.i,
             " out of range for a ", seq.kind_name(), " of ", size, " items");
    return from_marked(seq.items[k]);
  }
  BVal from_marked(const Value& v) {
    if (v.is_tensor() && v.tensor.is_meta() && v.tensor.offset() >= kTensorMark)
      return *leaves_[v.tensor.offset() - kTensorMark];
    if (v.kind == Value::Kind::kInt && v.i >= kIntMark && v.i < kIntMark + (int64_t{1} << 30)) {
      BVal b;
      b.sym = static_cast<int32_t>(v.i - kIntMark);
      b.v = Value::integer(values_.example_value(b.sym));
      return b;
    }
    BVal b;
    b.v = v;
    for (Value& x : b.v.items) {
      b.items.push_back(from_marked(x));
      x = b.items.back().v;
    }
    return b;
  }

  void outputs(Node* n) {
    IP_CHECK(n->args.size() == 1, kInvalidArgument,
             "[compile] the output node takes one "
             "argument, got ",
             n->args.size());
    std::vector<const BVal*> leaves;
    flatten_node_value(n->args[0], &leaves);
    for (size_t j = 0; j < leaves.size(); ++j) values_.add_output(*leaves[j], j);
  }

  void flatten_node_value(const Value& v, std::vector<const BVal*>* out) {
    if (v.is_node()) {
      flatten_bval(env_.at(v.node), out);
      return;
    }
    if (v.is_sequence()) {
      for (const Value& x : v.items) flatten_node_value(x, out);
      return;
    }
    constants_.push_back(values_.literal(v));
    out->push_back(&constants_.back());
  }
  static void flatten_bval(const BVal& b, std::vector<const BVal*>* out) {
    if (b.v.is_sequence() && b.sym < 0) {
      for (const BVal& x : b.items) flatten_bval(x, out);
      return;
    }
    out->push_back(&b);
  }

  PlanValues values_;
  std::unordered_map<const Node*, BVal> env_;
  std::vector<const BVal*> leaves_;
  std::deque<BVal> constants_;
};

}  // namespace

void build_steps(BuildState& st, const Graph& graph, const std::vector<Tensor>& examples) {
  PlanBuilder(st).run(graph, examples);
}

}  // namespace inplace
