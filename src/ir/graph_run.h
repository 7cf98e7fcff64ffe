// What running a graph takes and gives, whoever runs it (the eager interpreter, the functional
// runner, an exported program's helpers): the program's mutable state and the run's outputs.
// Below the interpreter so that layers which only pass these along need not include it.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "core/value.h"

namespace inplace {

// Mutable state of a program: get_attr target -> tensor. Buffers mutated by the program change
// here.
using State = std::map<std::string, Tensor>;

struct RunOutput {
  Value result;             // what the output node returns (nested as written)
  std::vector<Value> flat;  // the outputs in flattened order
};

}  // namespace inplace
