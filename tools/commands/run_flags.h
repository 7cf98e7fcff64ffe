// Flags of the commands that run engines (`exec`, `run`): --cuda-graph on|off, --threads T and
// --stats, one parser for both (docs/cuda.md, "CUDA graphs").
#pragma once
#include <string>

#include "engine/context_options.h"

namespace inplace::cli {

class ArgParser;

struct RunFlags {
  std::string cuda_graph = "on";
  std::string threads;  // empty: the context's default (1)
  bool stats = false;
};

// Registers --cuda-graph, --threads and --stats on a command's parser.
void run_flags(ArgParser& p, RunFlags* flags);
// The backend options the flags ask for; UsageError naming `command` on a bad value. A cpu
// engine takes no cuda_graph and leaves it out (apply_backend_options).
BackendOptions backend_options(const std::string& command, const RunFlags& flags);

}  // namespace inplace::cli
