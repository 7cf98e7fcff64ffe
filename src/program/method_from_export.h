// A method captured in the torch.export form (the caller's inputs and the module's parameters,
// buffers and constants as placeholders, with the graph signature) turned into the form
// compile_program() takes: state as get_attr nodes of the module's own dotted names, so that
// parameters become the program's weights (stored once) and every buffer a method writes
// becomes state (compiler/program_compile.h). The Python package captures methods this way.
#pragma once
#include <memory>

#include "ir/graph.h"
#include "ir/graph_run.h"

namespace inplace {

// A copy of `graph` in which every parameter, buffer and constant placeholder of the signature
// is a get_attr of its target whose value (graph.constants) is `state`'s tensor (borrowed, never
// copied); a buffer_mutation output is an in-place copy into that buffer and a
// user_input_mutation output an in-place copy into that input, both dropped from the outputs.
// The result has no signature: its placeholders are the user inputs, in order. Errors name the
// placeholder or target.
std::unique_ptr<Graph> state_as_attributes(const Graph& graph, const State& state);

}  // namespace inplace
