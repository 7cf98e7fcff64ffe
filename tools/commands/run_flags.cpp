#include "run_flags.h"

#include "arg_parser.h"

namespace inplace::cli {

void run_flags(ArgParser& p, RunFlags* flags) {
  p.option("--cuda-graph", "on|off", &flags->cuda_graph,
           "on a cuda engine: capture a call's work as a CUDA graph once and replay it while "
           "the bindings stay (default on); a cpu engine ignores it");
  p.option("--threads", "T", &flags->threads,
           "threads a call's host kernels share, the caller's included (default 1; on the cpu "
           "every step: products and attention split their rows, results unchanged)");
  p.flag("--stats", &flags->stats,
         "print what each engine's context counted (calls, graph captures and replays, steps "
         "on the host) to stdout");
}

BackendOptions backend_options(const std::string& command, const RunFlags& flags) {
  if (flags.cuda_graph != "on" && flags.cuda_graph != "off")
    throw UsageError(command + ": --cuda-graph takes on or off, got '" + flags.cuda_graph + "'");
  BackendOptions options{{"cuda_graph", flags.cuda_graph}};
  if (!flags.threads.empty()) {
    try {
      parse_threads_option(flags.threads);
    } catch (const Error&) {
      throw UsageError(command + ": --threads takes a thread count from 1 to 1024, got '" +
                       flags.threads + "'");
    }
    options[kThreadsOption] = flags.threads;
  }
  return options;
}

}  // namespace inplace::cli
