// `inplace exec --mode compiled [--no-alias]`: compiles the graph for the given inputs and runs
// the engine once. Mutated inputs and buffers are bound as the caller's (the state's) tensors,
// so the engine writes them in place (or copies back with --no-alias).
#include "compile_common.h"
#include "compiler/compile.h"
#include "engine/execution_context.h"
#include "exec_modes.h"

namespace inplace::cli {

std::vector<Value> run_mode_compiled(const Graph& graph, Inputs& inputs, State& state,
                                     const ExecOptions& options) {
  bind_lifted_placeholders(graph, inputs, state);
  std::vector<Node*> ph = graph.placeholders();
  std::vector<Tensor> examples;
  for (Node* n : ph) {
    auto it = inputs.find(n->name);
    IP_CHECK(it != inputs.end() && it->second.is_tensor(), kUnsupported, "[exec] input '",
             n->name, "' must be a tensor in compiled mode");
    examples.push_back(it->second.tensor);
  }
  CompileOptions co;
  co.alias = !options.no_alias;
  co.mutated_inputs = options.mutated_inputs;
  add_runtime_value_options(co, options.dynamic, options.value_ranges);
  CompiledProgram cp = compile(graph, examples, co);
  ExecutionContext ctx(cp.engine);
  for (int i = 0; i < cp.num_user_inputs; ++i) ctx.bind_input(i, examples[i]);
  for (const auto& [index, target] : cp.lifted_buffers) ctx.bind_input(index, state.at(target));
  std::vector<Tensor> outs = ctx.execute();
  std::vector<Value> flat;
  for (int j = 0; j < cp.engine->original_output_count(); ++j)
    flat.push_back(Value::from_tensor(outs[j]));
  return apply_signature(graph, flat, inputs, state);
}

}  // namespace inplace::cli
