// How `inplace exec` runs a graph. A mode takes the graph, the bound inputs and the program
// state and returns the user outputs in flattened order; it must leave every mutated input
// and buffer updated in place (the very tensors in `inputs` and `state`), so exec can write
// them out afterwards. eager is here; functional and compiled plug in beside it.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/exported_program.h"
#include "engine/context_options.h"
#include "ir/mutation.h"

namespace inplace::cli {

struct ExecOptions {
  std::string mode = "eager";
  bool no_alias = false;  // compiled: the copy-back engine instead of aliased I/O
  // --mutated-input INPUT=OUTPUT: output OUTPUT (index into the user outputs) is the new value
  // of placeholder INPUT and is written back into it after the call.
  std::vector<DeclaredMutation> mutated_inputs;
  // compiled: --dynamic INPUT:DIM:MAX and --value-range INPUT:LO:HI, as given.
  std::vector<std::string> dynamic, value_ranges;
  // compiled: the engine's backend options (--cuda-graph), and --stats (print the context's
  // counters to stdout after the call).
  BackendOptions backend_options;
  bool stats = false;
};

// Placeholder name -> value (tensors shared with the caller, never copied).
using Inputs = GraphInputs;

using ModeFn = std::vector<Value> (*)(const Graph& graph, Inputs& inputs, State& state,
                                      const ExecOptions& options);

struct Mode {
  const char* name;
  ModeFn run;  // null: accepted, but not available in this build yet
};

// Every mode exec accepts, available or not.
const std::vector<Mode>& exec_modes();

// Runs the graph as written in the eager interpreter. A torch.export signature is honoured
// (compiler/exported_program.h): buffer_mutation and user_input_mutation outputs are written
// back into their buffer/input, and only user_output outputs are returned.
std::vector<Value> run_mode_eager(const Graph& graph, Inputs& inputs, State& state,
                                  const ExecOptions& options);

// Runs the graph after the functionalization passes and writes each mutated input and buffer
// back through the io_map (exec_functional.cpp).
std::vector<Value> run_mode_functional(const Graph& graph, Inputs& inputs, State& state,
                                       const ExecOptions& options);

// Compiles the graph for these inputs into an engine (aliased I/O unless options.no_alias)
// and runs it once.
std::vector<Value> run_mode_compiled(const Graph& graph, Inputs& inputs, State& state,
                                     const ExecOptions& options);

}  // namespace inplace::cli
