// The CLI never writes its output over one of its inputs: `inplace compile g.json -o g.json`
// or `exec --out IN.safetensors` would destroy the user's file.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace inplace::cli {

// Throws kInvalidArgument "[<command>] <option> '<out>' is the same file as <what> '<path>'"
// when `out` names an existing file that is one of `inputs` ({what, path}: "the graph",
// "--inputs", "constant file"), through links and relative paths.
void refuse_output_over_inputs(const char* command, const char* option, const std::string& out,
                               const std::vector<std::pair<std::string, std::string>>& inputs);

}  // namespace inplace::cli
