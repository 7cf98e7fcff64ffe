#include "compiler/exported_program.h"

#include "interpreter/interpreter.h"
#include "ir/export_signature.h"
#include "program/session.h"

namespace inplace {

namespace {

// dst <- src for a write-back: same shape and dtype, as the engine's aliased I/O requires.
void write_back(const Tensor& dst, const Value& src, const std::string& what) {
  IP_CHECK(src.is_tensor(), kInvalidArgument, "[signature] ", what, ": the new value is a ",
           src.kind_name(), ", not a tensor");
  const Tensor& s = src.tensor;
  IP_CHECK(s.shape() == dst.shape(), kShapeMismatch, "[signature] ", what, ": new value of shape ",
           shape_str(s.shape()), " does not match shape ", shape_str(dst.shape()));
  IP_CHECK(s.dtype() == dst.dtype(), kDTypeMismatch, "[signature] ", what, ": new value of dtype ",
           dtype_name(s.dtype()), " does not match dtype ", dtype_name(dst.dtype()));
  if (!s.same_view(dst)) dst.copy_from(s);
}

}  // namespace

void bind_lifted_placeholders(const Graph& graph, GraphInputs& inputs, State& state) {
  for (const SignatureInput& in : graph.signature.inputs) {
    if (in.kind == "user_input") continue;
    auto it = state.find(in.target);
    IP_CHECK(it != state.end(), kNotFound, "[signature] placeholder '", in.node, "' is ", in.kind,
             " '", in.target, "' but the graph has no constant '", in.target, "'");
    inputs[in.node] = Value::from_tensor(it->second);
  }
}

std::vector<Value> apply_signature(const Graph& graph, const std::vector<Value>& flat,
                                   GraphInputs& inputs, State& state) {
  const auto& outs = graph.signature.outputs;
  if (outs.empty()) return flat;
  IP_CHECK(flat.size() == outs.size(), kInvalidArgument, "[signature] the signature lists ",
           outs.size(), " outputs but the graph returned ", flat.size());
  std::vector<Value> user;
  for (size_t i = 0; i < outs.size(); ++i) {
    const SignatureOutput& o = outs[i];
    if (o.kind == "buffer_mutation") {
      auto it = state.find(o.target);
      IP_CHECK(it != state.end(), kNotFound, "[signature] output ", i, " mutates buffer '",
               o.target, "', which the graph has no constant for");
      write_back(it->second, flat[i], str_cat("output ", i, " (buffer_mutation '", o.target, "')"));
    } else if (o.kind == "user_input_mutation") {
      auto it = inputs.find(o.target);
      IP_CHECK(it != inputs.end() && it->second.is_tensor(), kNotFound, "[signature] output ", i,
               " mutates input '", o.target, "', which is not a bound tensor input");
      write_back(it->second.tensor, flat[i],
                 str_cat("output ", i, " (user_input_mutation '", o.target, "')"));
    } else {
      user.push_back(flat[i]);
    }
  }
  return user;
}

std::vector<Value> run_exported_eager(const Graph& graph, GraphInputs& inputs, State& state) {
  bind_lifted_placeholders(graph, inputs, state);
  RunOutput r = run_eager(graph, inputs, &state);
  return apply_signature(graph, r.flat, inputs, state);
}

CompiledProgram compile_exported(const Graph& graph, GraphInputs& inputs, State& state,
                                 const CompileOptions& options) {
  bind_lifted_placeholders(graph, inputs, state);
  std::vector<Tensor> examples;
  for (Node* n : graph.placeholders()) {
    auto it = inputs.find(n->name);
    IP_CHECK(it != inputs.end() && it->second.is_tensor(), kUnsupported, "[compile] input '",
             n->name, "' must be a tensor to compile the graph");
    examples.push_back(it->second.tensor);
  }
  return compile(graph, examples, options);
}

std::shared_ptr<const Program> exported_program(const CompiledProgram& compiled, const Graph& graph,
                                                const State& state, EngineProgramOptions options) {
  // Engine input bindings: the placeholders in graph order, then the lifted buffers.
  std::vector<Node*> ph = graph.placeholders();
  for (size_t i = 0; i < ph.size(); ++i) {
    const SignatureInput* in = signature_input(graph, ph[i]->name);
    if (!in || in->kind == "user_input") continue;
    auto it = state.find(in->target);
    if (it != state.end()) options.state[static_cast<int>(i)] = {in->target, it->second};
  }
  for (const auto& [index, target] : compiled.lifted_buffers)
    options.state[index] = {target, state.at(target)};
  return program_from_engine(compiled.engine, options);
}

std::vector<Value> run_exported(const CompiledProgram& compiled, const Graph& graph,
                                GraphInputs& inputs, State& state,
                                const BackendOptions& backend_options, ContextStats* stats) {
  bind_lifted_placeholders(graph, inputs, state);
  std::shared_ptr<const Program> program = exported_program(compiled, graph, state);
  // The call's inputs by binding name: plain inputs and caller-owned state keep the engine's
  // binding names (the placeholders' own).
  std::map<std::string, Tensor> by_binding;
  std::vector<Node*> ph = graph.placeholders();
  for (int i = 0; i < compiled.num_user_inputs; ++i) {
    auto it = inputs.find(ph[i]->name);
    IP_CHECK(it != inputs.end() && it->second.is_tensor(), kNotFound, "[run_exported] input '",
             ph[i]->name, "' is not bound to a tensor");
    by_binding[compiled.engine->inputs()[i].name] = it->second.tensor;
  }
  const Method& method = program->methods()[0];
  std::map<std::string, Tensor> given;
  for (int i : method.call_inputs) {
    const std::string& name = method.engine->inputs()[i].name;
    given[name] = by_binding.at(name);
  }
  Session session(program);
  session.set_backend_options(backend_options);
  std::vector<Tensor> outs = session.run(method.name, given);
  session.synchronize();
  if (stats) *stats = session.stats(method.name);
  for (const StateEntry& e : program->state().entries()) {
    if (e.ownership != Ownership::kRuntime) continue;
    const Tensor& now = session.state(e.name);
    Tensor& dst = state.at(e.name);
    if (!now.same_view(dst)) dst.copy_from(now);
  }
  std::vector<Value> flat;
  for (int j = 0; j < compiled.engine->original_output_count(); ++j)
    flat.push_back(Value::from_tensor(outs[j]));
  return apply_signature(graph, flat, inputs, state);
}

}  // namespace inplace
