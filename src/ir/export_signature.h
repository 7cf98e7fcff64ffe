// The rules of a torch.export graph signature (Graph::signature), in one place for the passes,
// compile() and the CLI: which placeholders are the caller's inputs and which are the
// program's state (parameters, buffers, constants, bound by target to the graph's constants),
// and which outputs are new values of state or of inputs rather than user outputs.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/mutation.h"

namespace inplace {

// Whether placeholder `node` is state (a signature input of kind parameter, buffer or
// constant) rather than a user input. False for every placeholder of a graph without one.
bool is_lifted_placeholder(const Graph& graph, const std::string& node);
// The signature input of placeholder `node`, or null.
const SignatureInput* signature_input(const Graph& graph, const std::string& node);
// The placeholders the caller feeds, in graph order.
std::vector<std::string> user_input_names(const Graph& graph);
// The outputs the signature names as new values: user_input_mutation (the placeholder it
// names) and buffer_mutation (each placeholder bound to that buffer). Empty when the
// signature lists no outputs, or not one per flat output (`num_outputs`).
std::vector<DeclaredMutation> signature_mutations(const Graph& graph, int num_outputs);

}  // namespace inplace
