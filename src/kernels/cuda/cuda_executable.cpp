// The CUDA executable (cuda_executable.h): runtime scalars evaluated on the device, CUDA graphs
// captured and replayed, steps joined into one launch, and the device error flag (docs/cuda.md).
// The host never waits for the device in a call unless the engine's runtime scalars must be
// read on the host (the context's refresh does that).
#include "kernels/cuda/cuda_executable.h"

#include <algorithm>
#include <array>

#include "backend/host_step.h"
#include "core/device_allocator.h"
#include "kernels/cuda/publish_errors.h"
#include "kernels/cuda/registration.h"

namespace inplace::cuda {

CudaExecutable::CudaExecutable(const PreparedSteps& steps)
    : steps_(steps), runtime_(device_runtime()), workspace_(steps.device) {
  const Plan& p = plan();
  done_ = runtime_.create_event();
  error_ = Storage::allocate(4 * sizeof(int32_t), steps.device);
  error_host_ = static_cast<int32_t*>(runtime_.allocate_host(4 * sizeof(int32_t)));
  scalars_ = plan_device_scalars(p);
  launches_ = plan_launch_groups(p);
  for (const Step& s : p.steps) host_steps_ += s.on_host ? 1 : 0;
  if (scalars_.on_device) {
    const DeviceAllocator& allocator = device_allocator(steps.device);
    const size_t code_bytes = scalars_.code.size() * sizeof(int64_t);
    code_ = Storage::allocate(code_bytes, steps.device);
    allocator.copy_from_host(code_->data(), scalars_.code.data(), code_bytes);
    slots_ = Storage::allocate(p.scalars.size() * sizeof(int64_t), steps.device);
    inputs_ = Storage::allocate(std::max<size_t>(p.inputs.size(), 1) * sizeof(DeviceScalarInput),
                                steps.device);
    for (int k : scalars_.prefix_ends) fixed_scalars_[k] = kPrefixEndAtBound;
  }
  call_data_.resize(p.steps.size());
  for (size_t q = 0; q < p.steps.size(); ++q) {
    CallData& d = call_data_[q];
    d.error = static_cast<int32_t*>(error_->data());
    d.workspace = &workspace_;
    if (scalars_.on_device && scalars_.step_extent[q] >= 0)
      d.key_count = static_cast<const int64_t*>(slots_->data()) + scalars_.step_extent[q];
  }
}

CudaExecutable::~CudaExecutable() {
  runtime_.destroy_graph(graph_);
  graph_temporaries_.clear();
  runtime_.destroy_stream(capture_stream_);
  runtime_.destroy_event(done_);
  runtime_.release_host(error_host_);
}

void CudaExecutable::set_option(const std::string& key, const std::string& value) {
  IP_CHECK(key == "cuda_graph", kInvalidArgument, "[cuda] unknown backend option '", key,
           "'; the cuda backend takes cuda_graph=on|off");
  IP_CHECK(value == "on" || value == "off", kInvalidArgument,
           "[cuda] cuda_graph takes on or off, got '", value, "'");
  cuda_graph_ = value == "on";
}

// Small inputs are staged while graphs may be recorded: a graph keyed on a fresh position
// tensor's address would never be replayed. 64 KiB copies in well under a microsecond.
size_t CudaExecutable::stable_input_bytes() const {
  return cuda_graph_ && host_steps_ == 0 ? size_t{64} << 10 : 0;
}

std::map<std::string, int64_t> CudaExecutable::counters() const {
  return {{"graph_captures", graph_captures_},
          {"graph_replays", graph_replays_},
          {"joined_steps", joined_steps_},
          {"scalars_on_device", scalars_.on_device ? 1 : 0},
          {"host_steps", host_steps_},
          {"graph_off_for_host_steps", cuda_graph_ && host_steps_ > 0 ? 1 : 0}};
}

KernelContext CudaExecutable::step_context(size_t q, void* stream) const {
  KernelContext c;
  c.queue = stream;
  c.step = static_cast<int32_t>(q);
  c.backend = &call_data_[q];
  return c;
}

Tensor CudaExecutable::copy(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), t.dtype(), steps_.device);
  KernelContext c;
  c.queue = last_stream_;
  (*KernelTable::get().copy_kernel(DeviceType::kCuda))({Value::from_tensor(t)}, {out}, c);
  return out;
}

std::vector<int64_t> CudaExecutable::graph_key(const RunCall& call) const {
  std::vector<int64_t> key;
  for (size_t i = 0; i < call.input_data.size(); ++i) {
    key.push_back(reinterpret_cast<intptr_t>(call.input_data[i]));
    for (int64_t d : (*call.inputs)[i].shape()) key.push_back(d);
  }
  for (const void* o : call.output_data) key.push_back(reinterpret_cast<intptr_t>(o));
  // Values the host evaluated are baked into the kernels' arguments.
  if (!scalars_.on_device)
    for (int64_t v : *call.scalars) key.push_back(v);
  return key;
}

bool CudaExecutable::same_key(const RunCall& call, const std::vector<int64_t>& key) const {
  size_t at = 0;
  auto next = [&](int64_t v) { return at < key.size() && key[at++] == v; };
  for (size_t i = 0; i < call.input_data.size(); ++i) {
    if (!next(reinterpret_cast<intptr_t>(call.input_data[i]))) return false;
    for (int64_t d : (*call.inputs)[i].shape())
      if (!next(d)) return false;
  }
  for (const void* o : call.output_data)
    if (!next(reinterpret_cast<intptr_t>(o))) return false;
  if (!scalars_.on_device)
    for (int64_t v : *call.scalars)
      if (!next(v)) return false;
  return at == key.size();
}

void CudaExecutable::run_pair(size_t q, void* stream, CallObserver& observer) {
  const std::vector<std::vector<Value>>& args = *steps_.args;
  const std::vector<std::vector<Tensor>>& outs = *steps_.outs;
  try {
    (*launches_.pair[q])(args[q], outs[q], step_context(q, stream), args[q + 1], outs[q + 1],
                         step_context(q + 1, stream));
  } catch (const Error& e) {
    // Either step may be the one refused, and the first may have written: both are named.
    observer.failed(q, q + 1, e);
  }
}

void CudaExecutable::run_batch(size_t q, void* stream, CallObserver& observer) {
  const std::vector<size_t>& members = launches_.batch_members[q];
  std::array<StepCall, kMaxBatch> calls;
  calls[0] = step_call(q, stream);
  for (size_t k = 0; k < members.size(); ++k) calls[k + 1] = step_call(members[k], stream);
  try {
    (*launches_.batch[q])(calls.data(), static_cast<int>(members.size() + 1));
  } catch (const Error& e) {
    // The batch's steps run at q: every one up to its last member is in doubt.
    observer.failed(q, members.back(), e);
  }
}

std::array<StepCall, kMaxEpilogueWrites> CudaExecutable::write_calls(size_t q, void* stream) const {
  std::array<StepCall, kMaxEpilogueWrites> writes;
  const std::vector<size_t>& steps = launches_.write_steps[q];
  for (size_t k = 0; k < steps.size(); ++k) writes[k] = step_call(steps[k], stream);
  return writes;
}

StepCall CudaExecutable::step_call(size_t q, void* stream) const {
  return {&(*steps_.args)[q], &(*steps_.outs)[q], step_context(q, stream)};
}

bool CudaExecutable::run_with_writes(size_t q, void* stream, CallObserver& observer) {
  const std::vector<size_t>& steps = launches_.write_steps[q];
  const std::array<StepCall, kMaxEpilogueWrites> writes = write_calls(q, stream);
  try {
    return (*launches_.writes[q])(step_call(q, stream), writes.data(),
                                  static_cast<int>(steps.size()));
  } catch (const Error& e) {
    // Nothing launched when a form is refused; a launch error leaves every step in doubt.
    observer.failed(q, steps.back(), e);
    return true;  // the group's steps are accounted for: none runs again on its own
  }
}

bool CudaExecutable::run_with_prologue(size_t q, void* stream, CallObserver& observer) {
  const size_t p = q + 1;
  const std::vector<size_t>& steps = launches_.write_steps[p];
  const std::array<StepCall, kMaxEpilogueWrites> writes = write_calls(p, stream);
  try {
    return (*launches_.prologue[q])(step_call(q, stream), step_call(p, stream), writes.data(),
                                    static_cast<int>(steps.size()));
  } catch (const Error& e) {
    // Nothing launched when a form is refused; a launch error leaves every step in doubt.
    observer.failed(q, steps.empty() ? p : steps.back(), e);
    return true;  // the group's steps are accounted for: none runs again on its own
  }
}

void CudaExecutable::run_steps(void* stream, CallObserver& observer) {
  const size_t n = plan().steps.size();
  const bool profiling = observer.profiling();  // steps one by one, each timed on the host
  joined_steps_ = 0;
  done_in_group_.assign(n, 0);
  for (size_t q = 0; q < n; ++q) {
    if (done_in_group_[q]) continue;
    // q, the product after it and the product's writes in one launch.
    if (!profiling && launches_.prologue[q] && run_with_prologue(q, stream, observer)) {
      done_in_group_[q + 1] = 1;
      for (size_t r : launches_.write_steps[q + 1]) done_in_group_[r] = 1;
      joined_steps_ += 1 + launches_.write_count[q + 1];
      continue;
    }
    if (!profiling && launches_.writes[q] && run_with_writes(q, stream, observer)) {
      joined_steps_ += launches_.write_count[q];
      for (size_t r : launches_.write_steps[q]) done_in_group_[r] = 1;
      continue;
    }
    if (!profiling && launches_.batched[q]) continue;  // ran in an earlier step's batch
    if (!profiling && launches_.batch[q]) {
      run_batch(q, stream, observer);
      joined_steps_ += static_cast<int64_t>(launches_.batch_members[q].size());
      continue;
    }
    // q and q + 1 in one launch (unless q + 1 ran in an earlier step's launch).
    if (!profiling && launches_.pair[q] && !done_in_group_[q + 1]) {
      run_pair(q, stream, observer);
      ++q;
      ++joined_steps_;
      continue;
    }
    const int64_t t0 = profiling ? now_ns() : 0;
    try {
      if (plan().steps[q].on_host)
        run_host_step(steps_, q, backend_for(steps_.device), stream);
      else
        run_step(steps_, q, step_context(q, stream));
    } catch (const Error& e) {
      observer.failed(q, q, e);
    }
    if (profiling) observer.step_time(q, now_ns() - t0);
  }
}

void CudaExecutable::enqueue(void* stream, CallObserver& observer) {
  if (scalars_.on_device)
    runtime_.eval_scalars(
        static_cast<const int64_t*>(code_->data()), static_cast<int64_t>(scalars_.code.size()),
        static_cast<int64_t>(plan().scalars.size()),
        static_cast<const DeviceScalarInput*>(inputs_->data()),
        static_cast<int64_t*>(slots_->data()), static_cast<int32_t*>(error_->data()), stream);
  run_steps(stream, observer);
  publish_errors(static_cast<const int32_t*>(error_->data()), error_host_, stream);
}

// A call on another stream than the previous call's waits, on the device, for that call's work:
// both use the context's memory (its arena, outputs, workspace and error flag).
void CudaExecutable::begin_call(void* stream) {
  check_errors(/*wait=*/false);
  if (recorded_ && stream != last_stream_) runtime_.stream_wait(stream, done_);
  last_stream_ = stream;
}

// Where the scalar programs read their inputs, uploaded when a binding changed.
void CudaExecutable::upload_scalar_inputs(const RunCall& call, void* stream) {
  const Plan& p = plan();
  std::vector<DeviceScalarInput> in(p.inputs.size());
  for (size_t i = 0; i < in.size(); ++i) {
    in[i].data = call.input_data[i];
    in[i].dtype = static_cast<int32_t>(p.inputs[i].dtype);
    in[i].numel = (*call.inputs)[i].numel();
    if (p.inputs[i].value_range) {
      in[i].lo = p.inputs[i].value_range->lo;
      in[i].hi = p.inputs[i].value_range->hi;
    }
  }
  runtime_.copy_async(inputs_->data(), in.data(), in.size() * sizeof(DeviceScalarInput), stream);
  runtime_.record(done_, stream);
  runtime_.wait_event(done_);  // `in` is host memory of this frame; rare (rebinding)
}

void CudaExecutable::run(const RunCall& call, CallObserver& observer) {
  void* stream = call.queue;
  if (scalars_.on_device && call.bindings_changed) upload_scalar_inputs(call, stream);
  // With graphs on, a call whose key (every bound address, and the runtime values the host
  // evaluated) equals the previous call's replays the graph captured for it, capturing it the
  // first time; a call whose key is new runs directly. So the first call always runs directly
  // (handles and scratch are made outside any capture), a decoder whose positions are read on
  // the device captures once and replays from its third call on, and an engine whose host
  // values change every call never pays for a capture it would not replay.
  // A step on the host cannot be captured (it waits for the stream and copies through the
  // host): such an engine never records a graph.
  // The key is compared where it lies (a replay builds nothing): it is built only for a call
  // that runs directly.
  const bool graphs = cuda_graph_ && host_steps_ == 0;
  const bool on_graph = graphs && warm_ && graph_ && same_key(call, graph_key_);
  const bool on_last = graphs && warm_ && !on_graph && same_key(call, last_key_);
  if (!graphs || !warm_ || (!on_graph && !on_last)) {
    enqueue(stream, observer);
    warm_ = true;
    if (graphs) last_key_ = graph_key(call);
  } else {
    if (!on_graph) {
      std::vector<int64_t> key = last_key_;
      if (!capture_stream_) capture_stream_ = runtime_.create_stream();
      runtime_.destroy_graph(graph_);
      graph_ = nullptr;
      graph_key_.clear();
      graph_temporaries_.clear();
      runtime_.begin_capture(capture_stream_);
      set_graph_keep_alive(&graph_temporaries_);
      try {
        enqueue(capture_stream_, observer);
        set_graph_keep_alive(nullptr);
      } catch (...) {
        set_graph_keep_alive(nullptr);
        try {
          runtime_.destroy_graph(runtime_.end_capture(capture_stream_));
        } catch (...) {
        }
        throw;
      }
      graph_ = runtime_.end_capture(capture_stream_);
      graph_key_ = std::move(key);
      ++graph_captures_;
    } else {
      ++graph_replays_;
    }
    runtime_.launch_graph(graph_, stream);
  }
  runtime_.record(done_, stream);
  recorded_ = true;
}

void CudaExecutable::check_errors(bool wait) {
  if (!recorded_) return;
  if (wait)
    runtime_.wait_event(done_);
  else if (!runtime_.done(done_))
    return;
  const int32_t kind = error_host_[0], which = error_host_[1];
  if (kind == kDeviceErrorNone) return;
  // Every call so far has completed: clear the flag for the next ones, then report.
  const int32_t zeros[4] = {};
  device_allocator(steps_.device).copy_from_host(error_->data(), zeros, sizeof(zeros));
  for (int k = 0; k < 4; ++k) error_host_[k] = 0;
  const Plan& p = plan();
  auto scalar = [&](int32_t k) {
    return k >= 0 && k < static_cast<int32_t>(p.scalar_names.size())
               ? str_cat("runtime value s", k, " = ", p.scalar_names[k])
               : str_cat("runtime value ", k);
  };
  switch (kind) {
    case kDeviceErrorPosition: {
      const bool known = which >= 0 && which < static_cast<int32_t>(p.steps.size());
      const Step* s = known ? &p.steps[which] : nullptr;
      IP_FAIL(kOutOfRange, "[execute] step '", s ? s->node : "?", "' (op '",
              s && s->op ? s->op->schema.name : "?", "')",
              s && !s->writes_binding.empty()
                  ? str_cat(" writing binding '", s->writes_binding, "'")
                  : std::string(),
              ": an index or position outside the indexed dim was found on the device; no row "
              "was read or written there (reported after the call, at the first check once it "
              "completed)");
    }
    case kDeviceErrorRead:
      IP_FAIL(kOutOfRange, "[execute] ", scalar(which),
              " reads an element past the end of its input (found on the device)");
    case kDeviceErrorRange: {
      const bool known = which >= 0 && which < static_cast<int32_t>(p.inputs.size());
      const Binding* b = known ? &p.inputs[which] : nullptr;
      IP_FAIL(kOutOfRange, "[execute] input '", b ? b->name : "?",
              "' is outside its declared range",
              b && b->value_range ? str_cat(" [", b->value_range->lo, ", ", b->value_range->hi, "]")
                                  : std::string(),
              " (found on the device)");
    }
    case kDeviceErrorDivision:
      IP_FAIL(kInvalidArgument, "[execute] ", scalar(which),
              ": division or modulo by zero (found on the device)");
    default:
      IP_FAIL(kInternal, "[execute] the device reported error ", kind, " (", which, ")");
  }
}

namespace {

class CudaBackend final : public Backend {
 public:
  std::unique_ptr<Executable> prepare(const PreparedSteps& steps) const override {
    return std::make_unique<CudaExecutable>(steps);
  }
  void copy_async(void* dst, const void* src, size_t nbytes, void* queue) const override {
    device_runtime().copy_async(dst, src, nbytes, queue);
  }
  std::string host_step_note() const override {
    return "CUDA graphs are off for this engine (host work cannot be captured) and each such "
           "step waits for the stream";
  }
  std::vector<std::string> options() const override {
    return {
        "cuda_graph=on|off: capture a call's work once as a CUDA graph and replay it while "
        "every bound address stays (default on; off by itself for an engine with a step on "
        "the host)"};
  }
  void* create_queue() const override { return device_runtime().create_stream(); }
  void destroy_queue(void* queue) const override { device_runtime().destroy_stream(queue); }
  void synchronize(void* queue) const override {
    const DeviceRuntime& rt = device_runtime();
    Event done(rt);
    rt.record(done.event, queue);
    rt.wait_event(done.event);
  }
  void order_after(void* queue, void* after) const override {
    if (queue == after) return;
    const DeviceRuntime& rt = device_runtime();
    Event done(rt);
    rt.record(done.event, after);
    rt.stream_wait(queue, done.event);  // an event may be released while work waits on it
  }

 private:
  struct Event {
    explicit Event(const DeviceRuntime& rt) : runtime(rt), event(rt.create_event()) {}
    ~Event() { runtime.destroy_event(event); }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    const DeviceRuntime& runtime;
    void* event;
  };
};

}  // namespace

std::unique_ptr<Backend> make_backend() {
  return std::make_unique<CudaBackend>();
}

}  // namespace inplace::cuda
