// A context's backend options and counters as users give and read them, one plumbing for every
// surface that runs an engine (Python, `inplace exec`, `inplace run`, sessions): options come
// as one map (`cuda_graph` -> `off`), counters go out as one line or one map.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/execution_context.h"

namespace inplace {

// key -> value, each an option a backend documents (Backend::options()), or `threads`.
using BackendOptions = std::map<std::string, std::string>;

// The option every context takes, whatever its device: `threads=N`, the threads its host
// kernels share (ExecutionContext::set_threads; the caller's included, default 1). On the cpu
// that is every step; elsewhere the steps that run on the host.
inline constexpr const char* kThreadsOption = "threads";
inline constexpr const char* kThreadsOptionHelp =
    "threads=N: the threads a call's host kernels share, the caller's included (default 1)";
// N of `threads=N`: a whole number from 1 to 1024, else kInvalidArgument naming the option.
int parse_threads_option(const std::string& value);

// Sets every option of `options` that the context's backend takes (its value checked by the
// backend) and returns the keys it does not take, which are left out: a switch of one device
// on an engine of another (`cuda_graph` on a cpu engine) is no error; the caller decides
// whether a key left out is one.
std::vector<std::string> apply_backend_options(ExecutionContext& ctx,
                                               const BackendOptions& options);

// The keys a context on `device` takes: `threads`, then its backend's (the `key` of each
// "key=values: meaning").
std::vector<std::string> backend_option_keys(Device device);

// calls, host_scalar_reads, staged_inputs, then the backend's counters by name.
std::map<std::string, int64_t> stats_map(const ContextStats& stats);
// "calls=3 host_scalar_reads=0 staged_inputs=0 graph_captures=1 ..." (stats_map's order).
std::string stats_line(const ContextStats& stats);

}  // namespace inplace
