#include "engine/execution_context.h"
#include "engine/refresh_slice.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>

#include "engine/binding_checks.h"
#include "engine/op_meta.h"
#include "engine/write_set.h"

namespace inplace {

namespace {

// A call's own output buffer on the host, not zero-filled: the kernels write every element of
// the call's results, so a dynamic output planned at a large bound costs only the pages its
// extent touches (a 3-row call of a 2^28-row bound neither fills nor keeps 4 GiB).
Tensor fresh_output_buffer(int64_t nbytes) {
  constexpr size_t kAlignment = 64;
  size_t rounded = (static_cast<size_t>(nbytes) + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, std::max(rounded, kAlignment));
  IP_CHECK(p != nullptr, kOutOfRange, "[execute] cannot allocate an output buffer of ", nbytes,
           " bytes");
  std::shared_ptr<void> owner(p, std::free);
  return Tensor(Storage::borrow(p, static_cast<size_t>(nbytes), owner, Device::cpu()), 0, {nbytes},
                {1}, DType::kUInt8);
}

}  // namespace

ExecutionContext::ExecutionContext(std::shared_ptr<const Engine> engine)
    : engine_(std::move(engine)), device_(engine_->device()) {
  const Plan& plan = engine_->plan();
  arena_ = Storage::allocate(static_cast<size_t>(plan.arena_bytes), device_);
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    input_storage_.push_back(Storage::borrow(nullptr, 0, device_));
  for (size_t i = 0; i < plan.output_buffer_bytes.size(); ++i)
    output_storage_.push_back(Storage::borrow(nullptr, 0, device_));
  for (const ArenaSlot& s : plan.arena)
    arena_storage_.push_back(Storage::borrow(static_cast<char*>(arena_->data()) + s.offset_bytes,
                                             static_cast<size_t>(s.nbytes), device_));
  bound_inputs_.resize(plan.inputs.size());
  staged_inputs_.resize(plan.inputs.size());
  staging_.resize(plan.inputs.size());
  input_viewed_by_output_.assign(plan.inputs.size(), false);
  for (const TensorRef& r : plan.output_refs)
    if (r.buffer.kind == BufferKind::kInput) input_viewed_by_output_[r.buffer.index] = true;
  input_staged_.assign(plan.inputs.size(), false);
  input_moved_.assign(plan.inputs.size(), false);
  // Prepared bindings: the context's own memory, at one address for its whole life.
  for (const PreparedInput& p : plan.prepared) {
    const Binding& b = plan.inputs[p.input];
    bound_inputs_[p.input] = Tensor::empty(b.shape, b.dtype, device_);
    input_storage_[p.input]->rebind(bound_inputs_[p.input].data_ptr(),
                                    bound_inputs_[p.input].nbytes());
  }
  prepared_stale_.assign(plan.prepared.size(), true);
  bound_outputs_.resize(plan.output_buffer_bytes.size());
  scalar_values_.assign(plan.scalars.size(), 0);
  dyn_metas_.resize(plan.num_dyn);
  refresh_args_.resize(plan.steps.size());
  stop_dims_.assign(plan.steps.size(), -1);
  for (const RefreshItem& r : plan.refresh) {
    if (r.kind != RefreshItem::Kind::kStep) continue;
    refresh_args_[r.index] = plan.steps[r.index].args;
    stop_dims_[r.index] =
        runtime_stop_dim(plan.steps[r.index], refresh_args_[r.index]).value_or(-1);
  }
  for (size_t q = 0; q < plan.steps.size(); ++q) {
    const Step& s = plan.steps[q];
    if (s.kind != StepKind::kOut || !s.op || !s.op->has_tag(kCacheUpdate)) continue;
    bool from_inputs = true;
    for (const TensorSlot& t : s.tensors)
      if (t.path.size() == 1 && t.path[0] >= 2)
        from_inputs &=
            t.ref.buffer.kind == BufferKind::kInput || t.ref.buffer.kind == BufferKind::kConstant;
    if (from_inputs) position_checks_.push_back(static_cast<int>(q));
  }
  input_written_ = inputs_written(plan);
  for (const Mutation& a : plan.aliased_io) input_written_[a.input] = true;
  for (const Step& s : plan.steps) {
    std::vector<Value> args = s.args;
    for (const TensorSlot& t : s.tensors) leaf_at(args, t.path)->tensor = make_tensor(t.ref);
    std::vector<Tensor> outs;
    for (const TensorRef& o : s.outs) outs.push_back(make_tensor(o));
    step_args_.push_back(std::move(args));
    step_outs_.push_back(std::move(outs));
  }
  for (size_t q = 0; q < plan.steps.size(); ++q) kernels_.push_back(engine_->kernel(q));
  PreparedSteps prepared;
  prepared.plan = &plan;
  prepared.device = device_;
  prepared.args = &step_args_;
  prepared.outs = &step_outs_;
  prepared.kernels = &kernels_;
  executable_ = backend_for(device_).prepare(prepared);
  for (const auto& [k, v] : executable_->fixed_scalars()) scalar_values_[k] = v;
  call_.inputs = &bound_inputs_;
  call_.scalars = &scalar_values_;
  call_.input_data.resize(plan.inputs.size());
  call_.output_data.resize(plan.output_buffer_bytes.size());
  if (StepProfile::requested()) profile_ = std::make_unique<StepProfile>(plan);
}

ExecutionContext::~ExecutionContext() = default;

std::shared_ptr<Storage>& ExecutionContext::storage_of(BufferId id) {
  switch (id.kind) {
    case BufferKind::kInput:
      return input_storage_[id.index];
    case BufferKind::kOutput:
      return output_storage_[id.index];
    case BufferKind::kArena:
      return arena_storage_[id.index];
    case BufferKind::kConstant:
      break;
  }
  IP_ASSERT(false, "constants are not context storage");
}

const std::shared_ptr<Storage>& ExecutionContext::buffer_storage(BufferId id) const {
  if (id.kind == BufferKind::kConstant) return engine_->device_constants()[id.index].storage();
  return const_cast<ExecutionContext*>(this)->storage_of(id);
}

Tensor ExecutionContext::make_tensor(const TensorRef& r) const {
  return Tensor(buffer_storage(r.buffer), r.offset, r.shape, r.strides, r.dtype);
}

Tensor ExecutionContext::clone_on_device(const Tensor& t) const {
  return executable_->copy(t);
}

void ExecutionContext::bind_input(int index, const Tensor& t) {
  InFlightGuard guard(in_flight_, "bind", engine_->name());
  const Plan& plan = engine_->plan();
  IP_CHECK(index >= 0 && index < plan.caller_inputs(), kNotFound, "[bind] input index ", index,
           " out of range (", plan.caller_inputs(), " inputs)");
  const Binding& b = plan.inputs[index];
  // The very view bound already (a session's state and staged inputs, bound at every call):
  // nothing to check again, and the backend's per-binding work (a device's table of scalar
  // inputs, uploaded with a wait) is not redone.
  if (bound_inputs_[index].defined() && !t.is_meta() && bound_inputs_[index].same_view(t)) {
    std::erase(partly_updated_, index);
    return;
  }
  IP_CHECK(t.defined() && !t.is_meta(), kInvalidArgument, "[bind] input '", b.name,
           "' needs a tensor with data");
  bool fits = t.shape() == b.shape;
  if (!fits && !b.dynamic_dims.empty() && t.dim() == static_cast<int64_t>(b.shape.size())) {
    fits = true;
    for (size_t d = 0; d < b.shape.size(); ++d) {
      bool dynamic = std::find(b.dynamic_dims.begin(), b.dynamic_dims.end(),
                               static_cast<int64_t>(d)) != b.dynamic_dims.end();
      fits &= dynamic ? t.size(d) <= b.shape[d] : t.size(d) == b.shape[d];
    }
  }
  IP_CHECK(fits, kShapeMismatch, "[bind] input '", b.name, "' expects shape ", shape_str(b.shape),
           b.dynamic_dims.empty() ? "" : " (dynamic dims up to that extent)", ", got ",
           shape_str(t.shape()));
  IP_CHECK(t.dtype() == b.dtype, kDTypeMismatch, "[bind] input '", b.name, "' expects dtype ",
           dtype_name(b.dtype), ", got ", dtype_name(t.dtype()));
  IP_CHECK(t.device() == device_, kInvalidArgument, "[bind] input '", b.name, "' is on device '",
           t.device().str(), "'; the engine runs on '", device_.str(), "'");
  const bool writes = input_written_[index];
  // A caller that binds this input at another address than before (a fresh token or position
  // tensor each call) will do so again: from now on it is staged (below).
  if (bound_inputs_[index].defined() && bound_inputs_[index].data_ptr() != t.data_ptr())
    input_moved_[index] = true;
  // Staged: gathered from `t` into the context's memory at every execute()
  // (gather_staged_inputs), never snapshotted here. A strided input is (kernels read contiguous
  // bindings); so is a small one the call only reads that the caller has moved, where the
  // backend asks for stable addresses (work it recorded keeps reading the same memory while the
  // caller passes a fresh tensor each call). An input bound where it stays (a weight, a norm's
  // parameter) is read in place: no copy a call. Never one an output views, which must stay a
  // view of the caller's tensor.
  const bool stage =
      !t.is_contiguous() || (!writes && !input_viewed_by_output_[index] && input_moved_[index] &&
                             t.nbytes() <= executable_->stable_input_bytes());
  const void* before = input_storage_[index]->data();
  const bool same_shape =
      bound_inputs_[index].defined() && bound_inputs_[index].shape() == t.shape();
  if (stage) {
    IP_CHECK(!writes, kInvalidArgument, "[bind] input '", b.name, "' ", shape_str(t.shape()),
             " with strides ", shape_str(t.strides()),
             " is written in place and must be contiguous");
    // One allocation at the binding's bound, viewed at each call's shape: the address stays.
    if (!staging_[index].defined()) staging_[index] = Tensor::empty(b.shape, b.dtype, device_);
    staged_inputs_[index] =
        Tensor(staging_[index].storage(), 0, t.shape(), contiguous_strides(t.shape()), b.dtype);
    input_storage_[index]->rebind(staged_inputs_[index].data_ptr(), staged_inputs_[index].nbytes());
    input_staged_[index] = true;
  } else {
    input_storage_[index]->rebind(t.numel() ? t.data_ptr() : nullptr, t.nbytes());
    input_staged_[index] = false;
  }
  bound_inputs_[index] = t;
  mark_prepared_stale(index);
  // A read-only input bound again is checked against the written bindings only (check_bindings).
  if (writes || !bindings_checked_)
    bindings_checked_ = false;
  else if (std::find(rebound_inputs_.begin(), rebound_inputs_.end(), index) ==
           rebound_inputs_.end())
    rebound_inputs_.push_back(index);
  // The backend's per-binding work (a device's table of scalar inputs) is redone only when
  // what it reads moved: a staged input bound again at its shape changed nothing for it.
  if (!same_shape || input_storage_[index]->data() != before) call_.bindings_changed = true;
  std::erase(partly_updated_, index);
}

void ExecutionContext::input_written(int index) {
  InFlightGuard guard(in_flight_, "input_written", engine_->name());
  const Plan& plan = engine_->plan();
  IP_CHECK(index >= 0 && index < plan.caller_inputs(), kNotFound, "[input_written] input index ",
           index, " out of range (", plan.caller_inputs(), " inputs)");
  mark_prepared_stale(index);
}

void ExecutionContext::mark_prepared_stale(int source) {
  const Plan& plan = engine_->plan();
  for (size_t k = 0; k < plan.prepared.size(); ++k)
    if (plan.prepared[k].source == source) prepared_stale_[k] = true;
}

void ExecutionContext::bind_input(const std::string& name, const Tensor& t) {
  bind_input(engine_->input_index(name), t);
}

void ExecutionContext::bind_output(int index, const Tensor& t) {
  InFlightGuard guard(in_flight_, "bind", engine_->name());
  const Plan& plan = engine_->plan();
  IP_CHECK(index >= 0 && index < static_cast<int>(plan.outputs.size()), kNotFound,
           "[bind] output index ", index, " out of range (", plan.outputs.size(), " outputs)");
  const TensorRef& r = plan.output_refs[index];
  const Binding& b = plan.outputs[index];
  IP_CHECK(r.dyn < 0, kInvalidArgument, "[bind] output '", plan.outputs[index].name,
           "' has a size that changes per call (bound ", shape_str(plan.outputs[index].shape),
           "); it is returned in engine memory and cannot be bound");
  IP_CHECK(r.buffer.kind == BufferKind::kOutput && r.offset == 0 &&
               r.strides == contiguous_strides(r.shape) &&
               numel_of(r.shape) * static_cast<int64_t>(dtype_size(r.dtype)) ==
                   plan.output_buffer_bytes[r.buffer.index],
           kInvalidArgument, "[bind] output '", b.name,
           "' is not a plain result buffer (it aliases an input or another output)");
  IP_CHECK(t.shape() == b.shape && t.dtype() == b.dtype && t.is_contiguous(), kShapeMismatch,
           "[bind] output '", b.name, "' expects contiguous ", shape_str(b.shape), " ",
           dtype_name(b.dtype), ", got ", shape_str(t.shape()), " ", dtype_name(t.dtype()));
  IP_CHECK(t.device() == device_, kInvalidArgument, "[bind] output '", b.name, "' is on device '",
           t.device().str(), "'; the engine runs on '", device_.str(), "'");
  bound_outputs_[r.buffer.index] = t;
  bindings_checked_ = false;
}

void ExecutionContext::set_reuse_outputs(bool reuse) {
  InFlightGuard guard(in_flight_, "bind", engine_->name());
  if (reuse && !engine_->aliased_io().empty()) {
    std::fprintf(stderr,
                 "inplace: warning: engine '%s' has aliased I/O; pre-allocated output reuse "
                 "stays disabled\n",
                 engine_->name().c_str());
    reuse = false;
  }
  reuse_outputs_ = reuse;
}

void ExecutionContext::set_threads(int threads) {
  IP_CHECK(threads >= 1, kInvalidArgument, "[set_threads] expected at least 1 thread, got ",
           threads);
  share_threads(threads > 1 ? std::make_shared<ThreadPool>(threads) : nullptr);
}

void ExecutionContext::share_threads(std::shared_ptr<ThreadPool> pool) {
  InFlightGuard guard(in_flight_, "set_threads", engine_->name());
  thread_pool_ = std::move(pool);
}

// The context's side of a call: a failed step is named (with what the failed call left
// written), and steps are timed when INPLACE_PROFILE is set.
class ExecutionContext::Observer final : public CallObserver {
 public:
  explicit Observer(ExecutionContext& c) : c_(c) {}
  [[noreturn]] void failed(size_t first, size_t last, const Error& e) override {
    const Plan& plan = c_.engine_->plan();
    const Step& s = plan.steps[first];
    std::string where;
    if (last > first) {
      where = str_cat("[execute] steps '", s.node, "'");
      for (size_t r = first + 1; r <= last; ++r)
        where += str_cat(" and '", plan.steps[r].node, "'");
      where += " (run as one): ";
    } else if (s.writes_binding.empty()) {
      where = str_cat("[execute] step '", s.node, "': ");
    } else {
      where = str_cat("[execute] step '", s.node, "' writing binding '", s.writes_binding, "': ");
    }
    throw Error(e.code(), where + e.what() + c_.note_failed_call(first, last));
  }
  bool profiling() const override { return c_.profile_ != nullptr; }
  void step_time(size_t step, int64_t ns) override { c_.profile_->add_step(step, ns); }

 private:
  ExecutionContext& c_;
};

std::vector<Tensor> ExecutionContext::execute(void* queue) {
  InFlightGuard guard(in_flight_, "execute", engine_->name());
  executable_->begin_call(queue);
  ++stats_.calls;
  const int64_t call_start = profile_ ? profile_->start_call() : 0;
  call_.queue = queue;
  const Plan& plan = engine_->plan();
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    IP_CHECK(bound_inputs_[i].defined(), kInvalidArgument, "[execute] input '", plan.inputs[i].name,
             "' is not bound");
  check_bindings();
  gather_staged_inputs();
  make_prepared_inputs();
  if (profile_) profile_->mark(0);
  // Output buffers: caller-bound, reused, or fresh for this call. Off the host they are the
  // context's (allocated once, at their bound): a call allocates nothing and work the backend
  // recorded keeps their addresses; an output is valid until the context's next call.
  std::vector<Tensor> out_buffers(plan.output_buffer_bytes.size());
  const bool reuse = reuse_outputs_ || !executable_->host_reads_inputs();
  if (reuse && reused_outputs_.size() != out_buffers.size()) {
    reused_outputs_.clear();
    for (int64_t n : plan.output_buffer_bytes)
      reused_outputs_.push_back(Tensor::empty({n}, DType::kUInt8, device_));
  }
  for (size_t k = 0; k < out_buffers.size(); ++k) {
    if (bound_outputs_[k].defined())
      out_buffers[k] = bound_outputs_[k];
    else if (reuse)
      out_buffers[k] = reused_outputs_[k];
    else
      out_buffers[k] = fresh_output_buffer(plan.output_buffer_bytes[k]);
    output_storage_[k]->rebind(out_buffers[k].nbytes() ? out_buffers[k].data_ptr() : nullptr,
                               static_cast<size_t>(plan.output_buffer_bytes[k]));
    call_.output_data[k] = output_storage_[k]->data();
  }
  if (profile_) profile_->mark(1);
  // When the backend evaluates the runtime values, the refresh gives the same metadata at
  // every call (the views at their bound): it runs once.
  if (!plan.refresh.empty() && !(executable_->evaluates_scalars() && refreshed_)) {
    refresh();
    refreshed_ = true;
  }
  if (profile_) profile_->mark(2);
  check_positions();
  if (profile_) profile_->mark(3);
  const int64_t steps_start = profile_ ? StepProfile::now_ns() : 0;
  for (size_t i = 0; i < plan.inputs.size(); ++i) call_.input_data[i] = input_storage_[i]->data();
  {
    Observer observer(*this);
    ScopedThreadPool use_pool(thread_pool_.get());
    executable_->run(call_, observer);
  }
  call_.bindings_changed = false;
  std::vector<Tensor> results;
  results.reserve(plan.outputs.size());
  for (size_t j = 0; j < plan.output_refs.size(); ++j) {
    const TensorRef r = current(plan.output_refs[j]);
    switch (r.buffer.kind) {
      case BufferKind::kInput: {
        const Tensor& in = bound_inputs_[r.buffer.index];
        const Binding& b = plan.inputs[r.buffer.index];
        bool whole =
            r.offset == 0 && r.shape == b.shape && r.strides == contiguous_strides(b.shape);
        if (whole && !input_staged_[r.buffer.index]) {
          results.push_back(in);  // the caller's very tensor
        } else if (!input_staged_[r.buffer.index]) {
          results.push_back(
              Tensor(in.storage(), in.offset() + r.offset, r.shape, r.strides, r.dtype));
        } else {
          results.push_back(clone_on_device(make_tensor(r)));
        }
        break;
      }
      case BufferKind::kOutput: {
        const Tensor& buf = out_buffers[r.buffer.index];
        results.push_back(Tensor(buf.storage(),
                                 buf.offset() * static_cast<int64_t>(buf.itemsize()) /
                                         static_cast<int64_t>(dtype_size(r.dtype)) +
                                     r.offset,
                                 r.shape, r.strides, r.dtype));
        break;
      }
      case BufferKind::kConstant:
      case BufferKind::kArena:
        results.push_back(clone_on_device(make_tensor(r)));
        break;
    }
  }
  if (profile_) profile_->add_call(StepProfile::now_ns() - call_start, steps_start - call_start);
  return results;
}

void ExecutionContext::set_backend_option(const std::string& key, const std::string& value) {
  InFlightGuard guard(in_flight_, "set_backend_option", engine_->name());
  executable_->set_option(key, value);
}

void ExecutionContext::synchronize() {
  InFlightGuard guard(in_flight_, "synchronize", engine_->name());
  executable_->check_errors(/*wait=*/true);
}

ContextStats ExecutionContext::stats() const {
  ContextStats s = stats_;
  s.staged_inputs = std::count(input_staged_.begin(), input_staged_.end(), true);
  s.backend = executable_->counters();
  return s;
}

}  // namespace inplace
