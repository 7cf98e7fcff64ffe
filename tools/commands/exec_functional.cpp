// `inplace exec --mode functional`: the graph after the lowering passes, run in the
// interpreter, with every mutated input and buffer written back through the io_map.
#include "compiler/functional_runner.h"
#include "exec_modes.h"

namespace inplace::cli {

std::vector<Value> run_mode_functional(const Graph& graph, Inputs& inputs, State& state,
                                       const ExecOptions& options) {
  (void)options;  // exec itself writes back --mutated-input outputs, in every mode
  bind_lifted_placeholders(graph, inputs, state);
  PassOptions pass_options;
  pass_options.input_metas = metas_of_inputs(inputs);
  FunctionalProgram program = make_functional(graph, pass_options);
  RunOutput r = run_functional(program, inputs, &state);
  return apply_signature(graph, r.flat, inputs, state);
}

}  // namespace inplace::cli
