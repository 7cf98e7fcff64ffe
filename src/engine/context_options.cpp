#include "engine/context_options.h"

#include <algorithm>
#include <exception>

namespace inplace {

int parse_threads_option(const std::string& value) {
  int threads = 0;
  size_t used = 0;
  try {
    threads = std::stoi(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  IP_CHECK(used == value.size() && used > 0 && threads >= 1 && threads <= 1024, kInvalidArgument,
           "[options] threads takes a thread count from 1 to 1024, got '", value, "'");
  return threads;
}

std::vector<std::string> backend_option_keys(Device device) {
  std::vector<std::string> keys{kThreadsOption};
  for (const std::string& o : backend_for(device).options())
    keys.push_back(o.substr(0, o.find('=')));
  return keys;
}

std::vector<std::string> apply_backend_options(ExecutionContext& ctx,
                                               const BackendOptions& options) {
  const std::vector<std::string> taken = backend_option_keys(ctx.engine().device());
  std::vector<std::string> left_out;
  for (const auto& [key, value] : options) {
    if (key == kThreadsOption) {
      ctx.set_threads(parse_threads_option(value));
      continue;
    }
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
  m["prepared_inputs"] = stats.prepared_inputs;
  return m;
}

std::string stats_line(const ContextStats& stats) {
  std::string line = str_cat("calls=", stats.calls, " host_scalar_reads=", stats.host_scalar_reads,
                             " staged_inputs=", stats.staged_inputs);
  // Only an engine that prepares bindings (Plan::prepared) makes any.
  if (stats.prepared_inputs) line += str_cat(" prepared_inputs=", stats.prepared_inputs);
  for (const auto& [name, value] : stats.backend) line += str_cat(" ", name, "=", value);
  return line;
}

}  // namespace inplace
