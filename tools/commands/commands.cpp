#include "commands.h"

namespace inplace::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"print", "print a graph JSON file as an FX-style listing", &run_print},
      {"exec", "run a graph on inputs from a safetensors file (the conformance entry point)",
       &run_exec},
      {"plan", "compile a graph and print the engine: steps, bindings, aliased I/O, arena",
       &run_plan},
      {"compare", "compare two safetensors files tensor by tensor", &run_compare},
  };
  return kCommands;
}

}  // namespace inplace::cli
