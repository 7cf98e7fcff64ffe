#include "program/session.h"

#include <algorithm>

#include "core/error.h"

namespace inplace {

namespace {

// Holds the session's in-flight flag for one call; a second concurrent call is refused.
class SessionGuard {
 public:
  SessionGuard(std::atomic<bool>& flag, const char* what, const Program& p) : flag_(flag) {
    IP_CHECK(!flag_.exchange(true, std::memory_order_acquire), kInvalidArgument, "[session] ", what,
             " refused: a session of program '", p.name(),
             "' serves one call at a time and is already in a call on another thread");
  }
  ~SessionGuard() { flag_.store(false, std::memory_order_release); }
  SessionGuard(const SessionGuard&) = delete;
  SessionGuard& operator=(const SessionGuard&) = delete;

 private:
  std::atomic<bool>& flag_;
};

}  // namespace

Session::Session(std::shared_ptr<const Program> program) : program_(std::move(program)) {
  const StateTable& table = program_->state();
  state_.resize(table.size());
  for (size_t s = 0; s < table.size(); ++s)
    if (table[s].ownership == Ownership::kRuntime) state_[s] = table[s].initial.clone();
  for (const Method& m : program_->methods()) {
    auto ctx = std::make_unique<ExecutionContext>(m.engine);
    for (size_t i = 0; i < m.state_of_input.size(); ++i) {
      int s = m.state_of_input[i];
      if (s >= 0 && table[s].ownership == Ownership::kRuntime)
        ctx->bind_input(static_cast<int>(i), state_[s]);  // bound once: the address never moves
    }
    contexts_.push_back(std::move(ctx));
  }
}

std::vector<std::string> Session::set_backend_options(const BackendOptions& options) {
  SessionGuard guard(in_flight_, "set_backend_options", *program_);
  std::map<std::string, size_t> left_out;
  for (auto& ctx : contexts_)
    for (const std::string& key : apply_backend_options(*ctx, options)) ++left_out[key];
  std::vector<std::string> none_takes;
  for (const auto& [key, n] : left_out)
    if (n == contexts_.size()) none_takes.push_back(key);
  return none_takes;
}

ContextStats Session::stats(const std::string& method) const {
  return contexts_[program_->method_index(method)]->stats();
}

std::vector<Tensor> Session::run(const std::string& method,
                                 const std::map<std::string, Tensor>& inputs) {
  SessionGuard guard(in_flight_, "run", *program_);
  const int mi = program_->method_index(method);
  const Method& m = program_->methods()[mi];
  IP_CHECK(refused_.empty(), kInvalidArgument, "[session] method '", method,
           "' refused: ", refused_);
  const Engine& e = *m.engine;
  for (const auto& given : inputs) {
    const std::string& name = given.first;
    bool known = std::any_of(m.call_inputs.begin(), m.call_inputs.end(),
                             [&](int i) { return e.inputs()[i].name == name; });
    if (!known && program_->state().find(name) >= 0 &&
        program_->state()[program_->state().find(name)].ownership == Ownership::kRuntime)
      IP_FAIL(kInvalidArgument, "[session] method '", method, "': '", name,
              "' is runtime-owned state, held by the session; its inputs are ",
              m.call_input_names());
    IP_CHECK(known, kNotFound, "[session] method '", method, "' has no input '", name,
             "'; its inputs are ", m.call_input_names());
  }
  ExecutionContext& ctx = *contexts_[mi];
  for (int i : m.call_inputs) {
    const std::string& name = e.inputs()[i].name;
    auto it = inputs.find(name);
    IP_CHECK(it != inputs.end(), kNotFound, "[session] method '", method, "' needs input '", name,
             "'; its inputs are ", m.call_input_names());
    ctx.bind_input(i, it->second);
  }
  std::vector<Tensor> outputs;
  try {
    outputs = ctx.execute();
  } catch (const Error& err) {
    std::vector<std::string> runtime_written;
    for (int i : ctx.partly_updated()) {
      int s = m.state_of_input[i];
      if (s >= 0 && program_->state()[s].ownership == Ownership::kRuntime)
        runtime_written.push_back(program_->state()[s].name);
    }
    if (runtime_written.empty()) throw;
    std::string names;
    for (const std::string& n : runtime_written) names += (names.empty() ? "'" : ", '") + n + "'";
    refused_ = str_cat("a failed call of method '", method, "' partly wrote runtime-owned state ",
                       names, "; call reset() to restore the initial state");
    throw Error(err.code(), str_cat(err.what(), "; the session refuses calls until reset()"));
  }
  outputs.resize(e.original_output_count());
  return outputs;
}

void Session::reset() {
  SessionGuard guard(in_flight_, "reset", *program_);
  const StateTable& table = program_->state();
  for (size_t s = 0; s < table.size(); ++s)
    if (state_[s].defined()) state_[s].copy_from(table[s].initial);
  for (auto& ctx : contexts_) ctx->reset();
  refused_.clear();
}

Tensor Session::state(const std::string& name) const {
  int s = program_->state().index(name, "session");
  IP_CHECK(program_->state()[s].ownership == Ownership::kRuntime, kInvalidArgument,
           "[session] state '", name,
           "' is owned by the caller: it is the tensor the caller passes to each call");
  return state_[s];
}

}  // namespace inplace
