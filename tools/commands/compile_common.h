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
// --dynamic INPUT:DIM:MAX and --value-range INPUT:LO:HI into `options` (UsageError on bad text).
void add_runtime_value_options(CompileOptions& options, const std::vector<std::string>& dynamic,
                               const std::vector<std::string>& ranges);
// Registers --dynamic and --value-range on a command's parser.
class ArgParser;
void runtime_value_flags(ArgParser& p, std::vector<std::string>* dynamic,
                         std::vector<std::string>* ranges);

}  // namespace inplace::cli
