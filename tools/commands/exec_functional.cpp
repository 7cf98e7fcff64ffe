// `inplace exec --mode functional`: the functionalized graph in the interpreter, then each
// mutated value written back through the io_map, so the caller sees what eager leaves.
#include "exec_modes.h"
#include "passes/functional_runner.h"

namespace inplace::cli {

std::vector<Value> run_mode_functional(const Graph& graph, Inputs& inputs, State& state,
                                       const ExecOptions& options) {
  bind_lifted_placeholders(graph, inputs, state);
  PassOptions po;
  po.input_metas = metas_of_inputs(inputs);
  for (const auto& [name, index] : options.mutated_inputs)
    po.mutated_inputs.emplace_back(name, static_cast<int>(index));
  FunctionalProgram program = make_functional(graph, po);
  RunOutput r = run_functional(program, inputs, &state);
  return apply_signature(graph, r.flat, inputs, state);
}

}  // namespace inplace::cli
