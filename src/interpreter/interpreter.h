// The eager interpreter: runs a graph as written, with PyTorch's in-place and view semantics.
// It is the reference every compiled result is compared against.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/graph_run.h"

namespace inplace {

// A program's state (ir/graph_run.h) as the graph starts it: deep copies of its constants.
State initial_state(const Graph& graph);

// Runs `graph`. Placeholders bind `inputs` by name without copying, so in-place writes reach
// the caller's tensors. Placeholders missing from `inputs` use their default (args[0]) if any.
// `env`, when given, receives every node's value (shape work in passes).
RunOutput run_eager(const Graph& graph, const std::map<std::string, Value>& inputs, State* state,
                    std::map<const Node*, Value>* env = nullptr);

}  // namespace inplace
