// Compiling and running a graph with a torch.export signature the way `inplace exec` does, for
// C++ callers: parameters, buffers and constants are bound from the program state (by target,
// never copied), buffer_mutation / user_input_mutation outputs are written back into their
// buffer or input, and only user outputs are returned (ExportedProgram.module()'s contract).
// A graph without a signature runs the same way: every placeholder is a user input.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "engine/context_options.h"
#include "ir/graph_run.h"

namespace inplace {

// Placeholder name -> value (tensors shared with the caller, never copied).
using GraphInputs = std::map<std::string, Value>;

// Binds each parameter/buffer/constant placeholder of the signature to its tensor in `state`.
void bind_lifted_placeholders(const Graph& graph, GraphInputs& inputs, State& state);

// Writes the graph's flat outputs back as its signature says and returns the user outputs
// (all of `flat` for a graph without signature outputs).
std::vector<Value> apply_signature(const Graph& graph, const std::vector<Value>& flat,
                                   GraphInputs& inputs, State& state);

// The eager interpreter on the graph as written, the signature honoured.
std::vector<Value> run_exported_eager(const Graph& graph, GraphInputs& inputs, State& state);

// compile() with example inputs taken from `inputs` (user placeholders) and `state` (the
// signature's parameters, buffers and constants); every placeholder must be a tensor.
CompiledProgram compile_exported(const Graph& graph, GraphInputs& inputs, State& state,
                                 const CompileOptions& options = {});

// Runs a program compile_exported made, once: user inputs and parameters from `inputs`,
// mutated buffers bound as the state's own tensors (the engine writes them in place, or
// copies back for a copy-back engine), then the signature applied. Returns the user outputs.
// `backend_options` go to the context (apply_backend_options); `stats`, when given, gets what
// it counted.
std::vector<Value> run_exported(const CompiledProgram& compiled, const Graph& graph,
                                GraphInputs& inputs, State& state,
                                const BackendOptions& backend_options = {},
                                ContextStats* stats = nullptr);

}  // namespace inplace
