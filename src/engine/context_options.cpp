#include "engine/context_options.h"

#include <algorithm>

namespace inplace {

std::vector<std::string> backend_option_keys(Device device) {
  std::vector<std::string> keys;
  for (const std::string& o : backend_for(device).options())
    keys.push_back(o.substr(0, o.find('=')));
  return keys;
}

std::vector<std::string> apply_backend_options(ExecutionContext& ctx,
                                               const BackendOptions& options) {
  const std::vector<std::string> taken = backend_option_keys(ctx.engine().device());
  std::vector<std::string> left_out;
  for (const auto& [key, value] : options) {
    if (std::find(taken.begin(), taken.end(), key) == taken.end()) {
      left_out.push_back(key);
      continue;
    }
    ctx.set_backend_option(key, value);
  }
  return left_out;
}

std::map<std::string, int64_t> stats_map(const ContextStats& stats) {
  std::map<std::string, int64_t> m = stats.backend;
  m["calls"] = stats.calls;
  m["host_scalar_reads"] = stats.host_scalar_reads;
  m["staged_inputs"] = stats.staged_inputs;
  return m;
}

std::string stats_line(const ContextStats& stats) {
  std::string line = str_cat("calls=", stats.calls, " host_scalar_reads=", stats.host_scalar_reads,
                             " staged_inputs=", stats.staged_inputs);
  for (const auto& [name, value] : stats.backend) line += str_cat(" ", name, "=", value);
  return line;
}

}  // namespace inplace
