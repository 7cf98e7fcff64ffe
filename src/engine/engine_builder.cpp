// Engine::build: traces the functional graph once on example inputs, turning every node that
// computes into a step whose operands are resolved to buffers by storage identity (views share
// their base's storage, so a view costs no step).
#include <map>

#include "engine/build_state.h"
#include "engine/write_set.h"
#include "interpreter/interpreter.h"

namespace inplace {

namespace {

class Tracer {
 public:
  Tracer(BuildState& st) : st_(st) {}

  void run(const Graph& graph, const std::vector<Tensor>& examples) {
    std::map<const Node*, Value> env;
    std::vector<Node*> placeholders = graph.placeholders();
    IP_CHECK(examples.size() == placeholders.size(), kInvalidArgument, "[compile] graph '",
             graph.name, "' has ", placeholders.size(), " inputs but ", examples.size(),
             " example inputs were given");
    size_t k = 0;
    for (Node* n : graph.nodes()) {
      switch (n->op) {
        case NodeOp::kPlaceholder: env[n] = Value::from_tensor(add_input(n, examples[k++])); break;
        case NodeOp::kGetAttr: {
          auto it = graph.constants.find(n->target);
          IP_CHECK(it != graph.constants.end(), kNotFound, "[compile] node '", n->name,
                   "' reads unknown attribute '", n->target, "'");
          Tensor t = it->second.clone();
          add_constant(t, n->target);
          env[n] = Value::from_tensor(t);
          break;
        }
        case NodeOp::kCallFunction:
        case NodeOp::kCallMethod: env[n] = call(n, env); break;
        case NodeOp::kOutput: outputs(n, env); break;
      }
    }
  }

 private:
  Tensor add_input(Node* n, const Tensor& example) {
    Tensor t = Tensor::empty(example.shape(), example.dtype());
    if (!example.is_meta()) t.copy_from(example);
    buffer_of_[t.storage().get()] = {BufferKind::kInput, static_cast<int32_t>(st_.plan.inputs.size())};
    st_.plan.inputs.push_back({n->name, t.shape(), t.dtype()});
    return t;
  }

  BufferId add_constant(const Tensor& t, const std::string& name) {
    const auto& storage = t.storage();
    auto it = buffer_of_.find(storage.get());
    if (it != buffer_of_.end()) return it->second;
    int64_t n = static_cast<int64_t>(storage->nbytes() / t.itemsize());
    BufferId id{BufferKind::kConstant, static_cast<int32_t>(st_.plan.constants.size())};
    st_.plan.constants.push_back(Tensor(storage, 0, {n}, {1}, t.dtype()));
    st_.plan.constant_names.push_back(name);
    buffer_of_[storage.get()] = id;
    return id;
  }

  TensorRef ref_of(const Tensor& t, const std::string& node) {
    auto it = buffer_of_.find(t.storage().get());
    BufferId id = it != buffer_of_.end() ? it->second : add_constant(t, node + ".constant");
    return TensorRef{id, t.offset(), t.shape(), t.strides(), t.dtype()};
  }

  // Records every tensor leaf of `v` (with its path) and blanks it in the template.
  void collect(Value& v, std::vector<int>& path, std::vector<TensorSlot>* slots,
               const std::string& node) {
    if (v.is_tensor()) {
      slots->push_back({path, ref_of(v.tensor, node)});
      v.tensor = Tensor::meta(v.tensor.shape(), v.tensor.dtype(), v.tensor.strides());
      return;
    }
    for (size_t i = 0; i < v.items.size(); ++i) {
      path.push_back(static_cast<int>(i));
      collect(v.items[i], path, slots, node);
      path.pop_back();
    }
  }

  static Value substitute(const Value& v, const std::map<const Node*, Value>& env) {
    if (v.is_node()) return env.at(v.node);
    if (v.items.empty()) return v;
    Value r = v;
    for (Value& x : r.items) x = substitute(x, env);
    return r;
  }

  Value call(Node* n, const std::map<const Node*, Value>& env) {
    std::vector<Value> args;
    for (const Value& a : n->args) args.push_back(substitute(a, env));
    std::vector<std::pair<std::string, Value>> kwargs;
    for (const auto& [k, v] : n->kwargs) kwargs.emplace_back(k, substitute(v, env));
    ResolvedCall rc = resolve_call(n->target, args, kwargs, n->name);
    const std::string& op_name = rc.op->schema.name;
    IP_CHECK(!rc.op->dynamic_shape, kUnsupported, "[compile] node '", n->name, "': op '",
             rc.op->schema.full_name(),
             "' has a data-dependent shape; compiled engines need static shapes");
    IP_CHECK(op_name != "item" && op_name != "_local_scalar_dense" && op_name != "tolist",
             kUnsupported, "[compile] node '", n->name, "': op '", op_name,
             "' reads tensor data into a Python value, which a compiled engine cannot fold");
    IP_CHECK(rc.op->kind != OpKind::kMutating || op_name == "kv_cache_update", kUnsupported,
             "[compile] node '", n->name, "': op '", rc.op->schema.full_name(),
             "' mutates its input; run the functionalization passes before building an engine");
    Value result;
    try {
      result = rc.op->eager(rc.args);
    } catch (const Error& e) {
      throw Error(e.code(), str_cat("[compile] node '", n->name, "': ", e.what()));
    }
    std::vector<Value> leaves;
    flatten_value(result, &leaves);
    std::vector<Tensor> fresh;
    for (const Value& leaf : leaves)
      if (leaf.is_tensor() && !buffer_of_.count(leaf.tensor.storage().get()))
        fresh.push_back(leaf.tensor);
    if (fresh.empty()) return result;  // a view, an alias or a folded number: no step
    IP_CHECK(fresh.size() == leaves.size(), kUnsupported, "[compile] node '", n->name,
             "': op '", op_name, "' returns both views and fresh tensors");
    Step step;
    step.op = rc.op;
    step.node = n->name;
    step.args = rc.args;
    bool contiguous = true;
    for (const Tensor& t : fresh)
      contiguous &= t.is_contiguous() && t.offset() == 0 &&
                    t.storage()->nbytes() == t.nbytes();
    step.kind = (rc.op->out && contiguous) ? StepKind::kOut : StepKind::kEager;
    for (size_t i = 0; i < step.args.size(); ++i) {
      std::vector<int> path{static_cast<int>(i)};
      collect(step.args[i], path, &step.tensors, n->name);
    }
    int step_index = static_cast<int>(st_.plan.steps.size());
    for (const Tensor& t : fresh) {
      int32_t id = static_cast<int32_t>(st_.values.size());
      ValueBuffer vb;
      vb.nbytes = static_cast<int64_t>(t.storage()->nbytes());
      vb.producer = step_index;
      st_.values.push_back(vb);
      buffer_of_[t.storage().get()] = {BufferKind::kArena, id};
      step.outs.push_back(ref_of(t, n->name));
    }
    st_.plan.steps.push_back(std::move(step));
    return result;
  }

  void outputs(Node* n, const std::map<const Node*, Value>& env) {
    IP_CHECK(n->args.size() == 1, kInvalidArgument, "[compile] the output node takes one "
             "argument, got ", n->args.size());
    std::vector<Value> leaves;
    flatten_value(substitute(n->args[0], env), &leaves);
    for (size_t j = 0; j < leaves.size(); ++j) {
      Tensor t;
      if (leaves[j].is_tensor()) {
        t = leaves[j].tensor;
      } else {
        IP_CHECK(leaves[j].is_number(), kUnsupported, "[compile] output ", j, " is a ",
                 leaves[j].kind_name(), "; engine outputs are tensors and numbers");
        Scalar s = leaves[j].as_scalar("output");
        t = Tensor::scalar(s, s.is_float() ? DType::kFloat64 : s.default_dtype());
      }
      st_.plan.output_refs.push_back(ref_of(t, "output"));
      st_.plan.outputs.push_back({str_cat("output.", j), t.shape(), t.dtype()});
    }
  }

  BuildState& st_;
  std::map<const Storage*, BufferId> buffer_of_;
};

}  // namespace

std::shared_ptr<const Engine> Engine::build(const Graph& graph,
                                            const std::vector<AliasRequest>& io_map,
                                            int original_output_count,
                                            const std::vector<Tensor>& example_inputs,
                                            const EngineOptions& options) {
  BuildState st;
  st.io_map = io_map;
  st.options = options;
  Tracer(st).run(graph, example_inputs);
  st.plan.original_output_count = original_output_count;
  for (const AliasRequest& a : io_map) {
    IP_CHECK(a.output >= 0 && a.output < static_cast<int>(st.plan.outputs.size()) &&
                 a.input >= 0 && a.input < static_cast<int>(st.plan.inputs.size()),
             kInvalidArgument, "[compile] alias output ", a.output, " -> input ", a.input,
             " is out of range (", st.plan.outputs.size(), " outputs, ", st.plan.inputs.size(),
             " inputs)");
    const Binding& in = st.plan.inputs[a.input];
    const Binding& out = st.plan.outputs[a.output];
    IP_CHECK(in.shape == out.shape && in.dtype == out.dtype, kShapeMismatch, "[compile] output ",
             a.output, " ", shape_str(out.shape), " ", dtype_name(out.dtype),
             " cannot alias input '", in.name, "' ", shape_str(in.shape), " ",
             dtype_name(in.dtype));
  }
  reinplace(st);
  finalize_buffers(st);
  validate_plan(st.plan);
  check_write_set(st.plan);
  return std::shared_ptr<const Engine>(new Engine(std::move(st.plan), graph.name));
}

}  // namespace inplace
