#include "program/session.h"

#include <algorithm>
#include <exception>

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

// Whether `t` fits input binding `b` (bind_input's shape and dtype rule).
bool fits(const Binding& b, const Tensor& t) {
  if (t.dtype() != b.dtype || t.dim() != static_cast<int64_t>(b.shape.size())) return false;
  for (size_t d = 0; d < b.shape.size(); ++d) {
    const bool dynamic = std::find(b.dynamic_dims.begin(), b.dynamic_dims.end(),
                                   static_cast<int64_t>(d)) != b.dynamic_dims.end();
    if (dynamic ? t.size(d) > b.shape[d] : t.size(d) != b.shape[d]) return false;
  }
  return true;
}

// Copies every runtime-owned state's initial value into `state` (device memory) on `queue`,
// after the work already there, and waits for the copies.
void upload_initial(const Backend& backend, const StateTable& table,
                    const std::vector<Tensor>& state, void* queue) {
  std::vector<Tensor> sources;  // alive until the copies are done
  for (size_t s = 0; s < table.size(); ++s) {
    if (!state[s].defined()) continue;
    sources.push_back(table[s].initial.contiguous());
    if (state[s].nbytes())
      backend.copy_async(state[s].data_ptr(), sources.back().data_ptr(), state[s].nbytes(), queue);
  }
  backend.synchronize(queue);
}

}  // namespace

Session::Session(std::shared_ptr<const Program> program)
    : program_(std::move(program)), backend_(backend_for(program_->device())) {
  const StateTable& table = program_->state();
  const Device device = program_->device();
  state_.resize(table.size());
  for (size_t s = 0; s < table.size(); ++s) {
    if (table[s].ownership != Ownership::kRuntime) continue;
    state_[s] = device.is_cpu() ? table[s].initial.clone()
                                : Tensor::empty(table[s].shape, table[s].dtype, device);
  }
  if (!device.is_cpu()) upload_initial(backend_, table, state_, nullptr);
  input_memory_.resize(program_->methods().size());
  for (const Method& m : program_->methods()) {
    bound_.emplace_back(m.engine->inputs().size(), 0);
    auto ctx = std::make_unique<ExecutionContext>(m.engine);
    for (size_t i = 0; i < m.state_of_input.size(); ++i) {
      int s = m.state_of_input[i];
      if (s >= 0 && table[s].ownership == Ownership::kRuntime)
        ctx->bind_input(static_cast<int>(i), state_[s]);  // bound once: the address never moves
    }
    contexts_.push_back(std::move(ctx));
  }
}

Tensor Session::staged(int mi, int input, const Tensor& t, void* queue) {
  const Device device = program_->device();
  const Binding& b = program_->methods()[mi].engine->inputs()[input];
  // Anything else is bound as given: bind_input names what does not fit.
  if (device.is_cpu() || !t.defined() || t.is_meta() || !t.device().is_cpu() || !fits(b, t))
    return t;
  Tensor& memory = input_memory_[mi][input];
  if (!memory.defined()) {
    memory = Tensor::empty(b.shape, b.dtype, device);
    backend_.synchronize(nullptr);  // its zero-fill, on the default queue, before our copies
  }
  Tensor view(memory.storage(), 0, t.shape(), contiguous_strides(t.shape()), t.dtype());
  const Tensor source = t.contiguous();  // read before copy_async returns (host memory)
  if (source.nbytes())
    backend_.copy_async(view.data_ptr(), source.data_ptr(), source.nbytes(), queue);
  return view;
}

std::vector<std::string> Session::set_backend_options(const BackendOptions& options) {
  SessionGuard guard(in_flight_, "set_backend_options", *program_);
  BackendOptions rest = options;
  if (auto t = rest.find(kThreadsOption); t != rest.end()) {  // one pool for every method
    share_threads(parse_threads_option(t->second));
    rest.erase(t);
  }
  std::map<std::string, size_t> left_out;
  for (auto& ctx : contexts_)
    for (const std::string& key : apply_backend_options(*ctx, rest)) ++left_out[key];
  std::vector<std::string> none_takes;
  for (const auto& [key, n] : left_out)
    if (n == contexts_.size()) none_takes.push_back(key);
  return none_takes;
}

ContextStats Session::stats(const std::string& method) const {
  return contexts_[program_->method_index(method)]->stats();
}

std::vector<Tensor> Session::run(const std::string& method,
                                 const std::map<std::string, Tensor>& inputs, void* queue) {
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
  const std::vector<char>& bound = bound_[mi];
  for (int i : m.call_inputs) {
    const std::string& name = e.inputs()[i].name;
    IP_CHECK(bound[i] || inputs.count(name), kNotFound, "[session] method '", method,
             "' needs input '", name, "'; its inputs are ", m.call_input_names());
  }
  // After the session's previous call (another method's context, maybe another queue): both
  // use the session's state.
  if (ran_ && queue != last_queue_) backend_.order_after(queue, last_queue_);
  last_queue_ = queue;
  ran_ = true;
  if (!inputs.empty()) {
    for (int i : m.call_inputs) {
      auto given = inputs.find(e.inputs()[i].name);
      if (given == inputs.end()) continue;  // bound once
      ctx.bind_input(i,
                     m.state_of_input[i] < 0 ? staged(mi, i, given->second, queue) : given->second);
    }
  }
  std::vector<Tensor> outputs;
  try {
    outputs = ctx.execute(queue);
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

void Session::bind_state(const std::string& name, const Tensor& t) {
  SessionGuard guard(in_flight_, "bind_state", *program_);
  const int s = program_->state().index(name, "session");
  IP_CHECK(program_->state()[s].ownership == Ownership::kCaller, kInvalidArgument,
           "[session] state '", name, "' is runtime-owned: the session holds it");
  for (size_t mi = 0; mi < contexts_.size(); ++mi) {
    const Method& m = program_->methods()[mi];
    for (size_t i = 0; i < m.state_of_input.size(); ++i) {
      if (m.state_of_input[i] != s) continue;
      contexts_[mi]->bind_input(static_cast<int>(i), t);
      bound_[mi][i] = 1;
    }
  }
}

void Session::state_written(const std::string& name) {
  SessionGuard guard(in_flight_, "state_written", *program_);
  const int s = program_->state().index(name, "session");
  for (size_t mi = 0; mi < contexts_.size(); ++mi) {
    const Method& m = program_->methods()[mi];
    for (size_t i = 0; i < m.state_of_input.size(); ++i)
      if (m.state_of_input[i] == s) contexts_[mi]->input_written(static_cast<int>(i));
  }
}

void Session::bind_input(const std::string& method, const std::string& input, const Tensor& t) {
  SessionGuard guard(in_flight_, "bind_input", *program_);
  const int mi = program_->method_index(method);
  const Method& m = program_->methods()[mi];
  for (int i : m.call_inputs) {
    if (m.engine->inputs()[i].name != input) continue;
    IP_CHECK(m.state_of_input[i] < 0, kInvalidArgument, "[session] method '", method, "': '", input,
             "' is caller-owned state: bind it with bind_state");
    contexts_[mi]->bind_input(i, t);
    bound_[mi][i] = 1;
    return;
  }
  IP_FAIL(kNotFound, "[session] method '", method, "' has no input '", input, "'; its inputs are ",
          m.call_input_names());
}

void Session::set_threads(int threads) {
  SessionGuard guard(in_flight_, "set_threads", *program_);
  share_threads(threads);
}

void Session::share_threads(int threads) {
  IP_CHECK(threads >= 1, kInvalidArgument, "[session] threads: expected at least 1, got ", threads);
  // One pool for every method: the session runs one call at a time.
  std::shared_ptr<ThreadPool> pool = threads > 1 ? std::make_shared<ThreadPool>(threads) : nullptr;
  for (auto& ctx : contexts_) ctx->share_threads(pool);
}

int Session::threads() const {
  return contexts_.empty() ? 1 : contexts_.front()->threads();
}

void Session::reset(void* queue) {
  SessionGuard guard(in_flight_, "reset", *program_);
  const StateTable& table = program_->state();
  if (program_->device().is_cpu()) {
    for (size_t s = 0; s < table.size(); ++s)
      if (state_[s].defined()) state_[s].copy_from(table[s].initial);
  } else {
    for (auto& ctx : contexts_) {
      try {
        ctx->synchronize();
      } catch (const Error&) {  // a flagged call: what it wrote is overwritten now
      }
    }
    upload_initial(backend_, table, state_, queue);
    ran_ = false;  // nothing of the session is in flight
  }
  for (auto& ctx : contexts_) ctx->reset();
  refused_.clear();
}

void Session::synchronize() {
  SessionGuard guard(in_flight_, "synchronize", *program_);
  std::exception_ptr first;
  for (auto& ctx : contexts_) {
    try {
      ctx->synchronize();
    } catch (const Error&) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

void Session::set_backend_option(const std::string& key, const std::string& value) {
  SessionGuard guard(in_flight_, "set_backend_option", *program_);
  if (key == kThreadsOption) return share_threads(parse_threads_option(value));
  for (auto& ctx : contexts_) ctx->set_backend_option(key, value);
}

const ExecutionContext& Session::context(const std::string& method) const {
  return *contexts_[program_->method_index(method)];
}

Tensor Session::state(const std::string& name) const {
  int s = program_->state().index(name, "session");
  IP_CHECK(program_->state()[s].ownership == Ownership::kRuntime, kInvalidArgument,
           "[session] state '", name,
           "' is owned by the caller: it is the tensor the caller passes to each call");
  return state_[s];
}

}  // namespace inplace
