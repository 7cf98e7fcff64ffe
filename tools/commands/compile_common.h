// Helpers shared by the commands that compile a graph (`plan`, `compile`); defined in plan.cpp.
#pragma once
#include <string>
#include <vector>

#include "compiler/compile.h"

namespace inplace::cli {

// Example inputs for compiling: tensors from IN where given, else the placeholder's meta
// shape and dtype (graph JSON "meta"), else the signature's constant.
std::vector<Tensor> example_inputs(const Graph& graph, const std::string& inputs_path);
// --mutated-input INPUT=OUTPUT (OUTPUT an index or output.<i>): the one parser of the flag, for
// every command that takes it (mutated_input.cpp). UsageError naming `command` on bad text.
DeclaredMutation parse_mutated_input(const std::string& command, const std::string& text);
std::vector<DeclaredMutation> parse_mutated_inputs(const std::string& command,
                                                   const std::vector<std::string>& texts);
// --no-alias and --mutated-input INPUT=OUTPUT... as CompileOptions (UsageError on bad text).
CompileOptions compile_options(const std::string& command, bool no_alias,
                               const std::vector<std::string>& mutated);
// --dynamic INPUT:DIM:MAX and --value-range INPUT:LO:HI into `options` (UsageError on bad text).
void add_runtime_value_options(CompileOptions& options, const std::vector<std::string>& dynamic,
                               const std::vector<std::string>& ranges);
// Registers --dynamic and --value-range on a command's parser.
class ArgParser;
void runtime_value_flags(ArgParser& p, std::vector<std::string>* dynamic,
                         std::vector<std::string>* ranges);
// Registers --strict-device (CompileOptions::strict_device) on a command's parser.
void strict_device_flag(ArgParser& p, bool* strict);

}  // namespace inplace::cli
