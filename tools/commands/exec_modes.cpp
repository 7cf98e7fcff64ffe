#include "exec_modes.h"

namespace inplace::cli {

const std::vector<Mode>& exec_modes() {
  static const std::vector<Mode> kModes = {
      {"eager", &run_mode_eager},
      {"functional", &run_mode_functional},
      {"compiled", &run_mode_compiled},
  };
  return kModes;
}

std::vector<Value> run_mode_eager(const Graph& graph, Inputs& inputs, State& state,
                                  const ExecOptions& options) {
  (void)options;
  return run_exported_eager(graph, inputs, state);
}

}  // namespace inplace::cli
