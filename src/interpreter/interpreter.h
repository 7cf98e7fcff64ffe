// The eager interpreter: runs a graph as written, with PyTorch's in-place and view semantics.
// It is the reference every compiled result is compared against.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace inplace {

// Mutable state of a program: get_attr target -> tensor. Start it from the graph's constants
// with initial_state(); buffers mutated by the program change here.
using State = std::map<std::string, Tensor>;
State initial_state(const Graph& graph);  // deep copies of the constants

struct RunOutput {
  Value result;             // what the output node returns (nested as written)
  std::vector<Value> flat;  // the outputs in flattened order
};

// Runs `graph`. Placeholders bind `inputs` by name without copying, so in-place writes reach
// the caller's tensors. Placeholders missing from `inputs` use their default (args[0]) if any.
// `env`, when given, receives every node's value (shape work in passes).
RunOutput run_eager(const Graph& graph, const std::map<std::string, Value>& inputs, State* state,
                    std::map<const Node*, Value>* env = nullptr);

}  // namespace inplace
