// Compiling and running a graph with a torch.export signature the way `inplace exec` does, for
// C++ callers: parameters, buffers and constants come from the program state (by target),
// buffer_mutation / user_input_mutation outputs are written back into their buffer or input,
// and only user outputs are returned (ExportedProgram.module()'s contract). A graph without a
// signature runs the same way: every placeholder is a user input. The compiled engine runs as
// a one-method program on a session (exported_program()), the one bound-state implementation.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "engine/context_options.h"
#include "ir/graph_run.h"
#include "program/engine_program.h"

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

// The engine compile_exported made as a one-method program (`options.method`, default
// `forward`; program_from_engine): every parameter, buffer and constant placeholder of the
// signature and every buffer lifted from get_attr is its state, valued from `state` by target
// (a weight when the engine never writes it, else runtime-owned state starting from that
// value). A signature placeholder whose target `state` lacks stays a plain input.
std::shared_ptr<const Program> exported_program(const CompiledProgram& compiled, const Graph& graph,
                                                const State& state,
                                                EngineProgramOptions options = {});

// Runs a program compile_exported made, once, on a session of exported_program(): user
// inputs from `inputs` (a mutated one updated in place), the state's values from `state` and
// written back into it after the call, then the signature applied. Returns the user outputs.
// `backend_options` go to the session; `stats`, when given, gets what its context counted.
std::vector<Value> run_exported(const CompiledProgram& compiled, const Graph& graph,
                                GraphInputs& inputs, State& state,
                                const BackendOptions& backend_options = {},
                                ContextStats* stats = nullptr);

}  // namespace inplace
