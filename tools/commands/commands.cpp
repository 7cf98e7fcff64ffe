#include "commands.h"

namespace inplace::cli {

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"print", "print a graph JSON file as an FX-style listing", &run_print},
      {"exec", "run a graph on inputs from a safetensors file (the conformance entry point)",
       &run_exec},
      {"passes", "run the passes that make a graph functional and print it", &run_passes},
      {"plan", "compile a graph and print the engine: steps, bindings, aliased I/O, arena",
       &run_plan},
      {"compile", "compile a graph (or --method NAME=GRAPH.json ...: a program) and save it",
       &run_compile},
      {"inspect", "print an engine or program file: methods, bindings, aliased I/O, state",
       &run_inspect},
      {"run", "replay a script of calls on a program's sessions (--calls CALLS.json)", &run_run},
      {"generate", "generate tokens from a program (prefill, then decode per token)",
       &run_generate},
      {"compare", "compare two safetensors files tensor by tensor", &run_compare},
      {"ops", "list the supported ops: schema and how an engine runs each", &run_ops},
      {"demo", "decode with the built-in Llama-style model (caches written in place)", &run_demo},
      {"bench", "time decode steps of the built-in model: aliased, copy-back, PyTorch, floor",
       &run_bench},
  };
  return kCommands;
}

}  // namespace inplace::cli
