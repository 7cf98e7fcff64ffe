// `inplace exec --mode compiled [--no-alias]`: compiles the graph for the given inputs and runs
// the engine once. Mutated inputs and buffers are bound as the caller's (the state's) tensors,
// so the engine writes them in place (or copies back with --no-alias).
#include <cstdio>

#include "compile_common.h"
#include "compiler/exported_program.h"
#include "exec_modes.h"

namespace inplace::cli {

std::vector<Value> run_mode_compiled(const Graph& graph, Inputs& inputs, State& state,
                                     const ExecOptions& options) {
  CompileOptions co;
  co.alias = !options.no_alias;
  co.mutated_inputs = options.mutated_inputs;
  add_runtime_value_options(co, options.dynamic, options.value_ranges);
  CompiledProgram cp = compile_exported(graph, inputs, state, co);
  ContextStats stats;
  std::vector<Value> out = run_exported(cp, graph, inputs, state, options.backend_options, &stats);
  if (options.stats) std::printf("stats: %s\n", stats_line(stats).c_str());
  return out;
}

}  // namespace inplace::cli
