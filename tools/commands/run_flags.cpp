#include "run_flags.h"

#include "arg_parser.h"

namespace inplace::cli {

void run_flags(ArgParser& p, RunFlags* flags) {
  p.option("--cuda-graph", "on|off", &flags->cuda_graph,
           "on a cuda engine: capture a call's work as a CUDA graph once and replay it while "
           "the bindings stay (default on); a cpu engine ignores it");
  p.flag("--stats", &flags->stats,
         "print what each engine's context counted (calls, graph captures and replays, steps "
         "on the host) to stdout");
}

BackendOptions backend_options(const std::string& command, const RunFlags& flags) {
  if (flags.cuda_graph != "on" && flags.cuda_graph != "off")
    throw UsageError(command + ": --cuda-graph takes on or off, got '" + flags.cuda_graph + "'");
  return {{"cuda_graph", flags.cuda_graph}};
}

}  // namespace inplace::cli
