// Session: one conversation over a program. It owns the runtime-owned state (allocated from the
// initial values when it is created; the addresses never move across calls) and one execution
// context per method, with that state bound once. Sessions never see each other's state and
// may run calls on different threads at the same time; one session serves one call at a time
// (a concurrent call, reset() included, is refused). After a failed call that partly wrote
// runtime-owned state, the session refuses every call until reset().
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/context_options.h"
#include "engine/execution_context.h"
#include "program/program.h"

namespace inplace {

struct GenerateOptions;
struct GenerateResult;

class Session {
 public:
  explicit Session(std::shared_ptr<const Program> program);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Program& program() const { return *program_; }

  // Runs `method`. `inputs` holds, by name, every plain input of the method and every
  // caller-owned state it uses (updated in place: same storage, same address); unknown or
  // missing names are errors listing the method's inputs. Returns the method's outputs.
  std::vector<Tensor> run(const std::string& method, const std::map<std::string, Tensor>& inputs);
  // The prompt through `prefill`, then `decode` per new token, sampled on the host, with no
  // caller code in the loop (generate.h; the methods' convention: docs/programs.md).
  GenerateResult generate(const std::vector<int64_t>& prompt, const GenerateOptions& options);
  // Restores every runtime-owned state to its initial value (in place: addresses are kept)
  // and makes a session refused after a failed call usable again.
  void reset();
  // The session's runtime-owned state `name`: the live tensor (reads see every later call).
  Tensor state(const std::string& name) const;
  // Backend options for every method's context (engine/context_options.h); returns the keys
  // no method's backend takes.
  std::vector<std::string> set_backend_options(const BackendOptions& options);
  // What method `method`'s context counts (ExecutionContext::stats).
  ContextStats stats(const std::string& method) const;
  // Non-empty while a failed call's partial write keeps the session refused: what to reset.
  const std::string& refused_reason() const { return refused_; }

 private:
  std::shared_ptr<const Program> program_;
  std::vector<Tensor> state_;  // by state entry; undefined for caller-owned entries
  std::vector<std::unique_ptr<ExecutionContext>> contexts_;  // by method
  std::atomic<bool> in_flight_{false};
  std::string refused_;
};

}  // namespace inplace
