// Helpers shared by the commands that compile a graph (`plan`, `compile`); defined in plan.cpp.
#pragma once
#include <string>
#include <vector>

#include "compiler/compile.h"

namespace inplace::cli {

// Example inputs for compiling: tensors from IN where given, else the placeholder's meta
// shape and dtype (graph JSON "meta"), else the signature's constant.
std::vector<Tensor> example_inputs(const Graph& graph, const std::string& inputs_path);
// --no-alias and --mutated-input INPUT=OUTPUT... as CompileOptions (UsageError on bad text).
CompileOptions compile_options(bool no_alias, const std::vector<std::string>& mutated);

}  // namespace inplace::cli
