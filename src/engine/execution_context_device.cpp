// ExecutionContext on a GPU: runtime scalars evaluated on the device, CUDA graphs captured and
// replayed, and the device error flag (docs/cuda.md). The host never waits for the device in a
// call unless the engine's runtime scalars must be read on the host.
#include "backend/device_runtime.h"
#include "core/device_allocator.h"
#include "engine/binding_checks.h"
#include "engine/execution_context.h"
#include "engine/launch_groups.h"

namespace inplace {

void ExecutionContext::init_device() {
  const Plan& plan = engine_->plan();
  gpu_ = std::make_unique<DeviceState>();
  DeviceState& g = *gpu_;
  g.runtime = device_runtime(device_.type);
  IP_CHECK(g.runtime != nullptr, kUnsupported, "[context] device '", device_.str(),
           "' has no runtime in this build");
  g.done = g.runtime->create_event();
  g.error = Storage::allocate(4 * sizeof(int32_t), device_);
  g.error_host = static_cast<int32_t*>(g.runtime->allocate_host(4 * sizeof(int32_t)));
  kernel_context_.error = static_cast<int32_t*>(g.error->data());
  g.workspace.device = device_;
  kernel_context_.workspace = &g.workspace;
  g.scalars = plan_device_scalars(plan);
  g.launches = plan_launch_groups(plan, device_.type);
  if (!g.scalars.on_device) return;
  const DeviceAllocator& allocator = device_allocator(device_);
  const size_t code_bytes = g.scalars.code.size() * sizeof(int64_t);
  g.code = Storage::allocate(code_bytes, device_);
  allocator.copy_from_host(g.code->data(), g.scalars.code.data(), code_bytes);
  g.slots = Storage::allocate(plan.scalars.size() * sizeof(int64_t), device_);
  g.inputs = Storage::allocate(std::max<size_t>(plan.inputs.size(), 1) * sizeof(DeviceScalarInput),
                               device_);
  for (int k : g.scalars.prefix_ends) scalar_values_[k] = kPrefixEndAtBound;
}

void ExecutionContext::set_cuda_graph(bool on) {
  InFlightGuard guard(in_flight_, "set_cuda_graph", engine_->name());
  cuda_graph_ = on;
}

std::vector<int64_t> ExecutionContext::graph_key() const {
  const Plan& plan = engine_->plan();
  std::vector<int64_t> key;
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    key.push_back(reinterpret_cast<intptr_t>(input_storage_[i]->data()));
    for (int64_t d : bound_inputs_[i].shape()) key.push_back(d);
  }
  for (const auto& o : output_storage_) key.push_back(reinterpret_cast<intptr_t>(o->data()));
  // Values the host evaluated are baked into the kernels' arguments.
  if (!gpu_->scalars.on_device)
    for (int64_t v : scalar_values_) key.push_back(v);
  return key;
}

void ExecutionContext::enqueue_on_device(void* stream) {
  DeviceState& g = *gpu_;
  const Plan& plan = engine_->plan();
  kernel_context_.stream = stream;
  if (g.scalars.on_device)
    g.runtime->eval_scalars(
        static_cast<const int64_t*>(g.code->data()), static_cast<int64_t>(plan.scalars.size()),
        static_cast<const DeviceScalarInput*>(g.inputs->data()),
        static_cast<int64_t*>(g.slots->data()), static_cast<int32_t*>(g.error->data()), stream);
  run_steps();
  g.runtime->copy_async(g.error_host, g.error->data(), 4 * sizeof(int32_t), stream);
}

// A call on another stream than the previous call's waits, on the device, for that call's work:
// both use the context's memory (its arena, outputs, workspace and error flag).
void ExecutionContext::order_after_last_call(void* stream) {
  DeviceState& g = *gpu_;
  if (g.recorded && stream != g.last_stream) g.runtime->stream_wait(stream, g.done);
  g.last_stream = stream;
}

void ExecutionContext::run_on_device(void* stream) {
  DeviceState& g = *gpu_;
  const Plan& plan = engine_->plan();
  if (g.scalars.on_device && g.inputs_dirty) {  // where the scalar programs read their inputs
    std::vector<DeviceScalarInput> in(plan.inputs.size());
    for (size_t i = 0; i < in.size(); ++i) {
      in[i].data = input_storage_[i]->data();
      in[i].dtype = static_cast<int32_t>(plan.inputs[i].dtype);
      in[i].numel = bound_inputs_[i].numel();
      if (plan.inputs[i].value_range) {
        in[i].lo = plan.inputs[i].value_range->lo;
        in[i].hi = plan.inputs[i].value_range->hi;
      }
    }
    g.runtime->copy_async(g.inputs->data(), in.data(), in.size() * sizeof(DeviceScalarInput),
                          stream);
    g.runtime->record(g.done, stream);
    g.runtime->wait_event(g.done);  // `in` is host memory of this frame; rare (rebinding)
    g.inputs_dirty = false;
  }
  if (!cuda_graph_ || !g.warm) {
    enqueue_on_device(stream);
    g.warm = true;
  } else {
    std::vector<int64_t> key = graph_key();
    if (!g.graph || key != g.graph_key) {
      if (!g.capture_stream) g.capture_stream = g.runtime->create_stream();
      g.runtime->destroy_graph(g.graph);
      g.graph = nullptr;
      g.graph_temporaries.clear();
      g.runtime->begin_capture(g.capture_stream);
      set_graph_keep_alive(&g.graph_temporaries);
      try {
        enqueue_on_device(g.capture_stream);
        set_graph_keep_alive(nullptr);
      } catch (...) {
        set_graph_keep_alive(nullptr);
        try {
          g.runtime->destroy_graph(g.runtime->end_capture(g.capture_stream));
        } catch (...) {
        }
        throw;
      }
      g.graph = g.runtime->end_capture(g.capture_stream);
      g.graph_key = std::move(key);
      ++stats_.graph_captures;
    } else {
      ++stats_.graph_replays;
    }
    g.runtime->launch_graph(g.graph, stream);
  }
  g.runtime->record(g.done, stream);
  g.recorded = true;
}

void ExecutionContext::synchronize() {
  InFlightGuard guard(in_flight_, "synchronize", engine_->name());
  if (gpu_) check_device_error(/*wait=*/true);
}

void ExecutionContext::check_device_error(bool wait) {
  DeviceState& g = *gpu_;
  if (!g.recorded) return;
  if (wait)
    g.runtime->wait_event(g.done);
  else if (!g.runtime->done(g.done))
    return;
  const int32_t kind = g.error_host[0], which = g.error_host[1];
  if (kind == kDeviceErrorNone) return;
  // Every call so far has completed: clear the flag for the next ones, then report.
  const int32_t zeros[4] = {};
  device_allocator(device_).copy_from_host(g.error->data(), zeros, sizeof(zeros));
  for (int k = 0; k < 4; ++k) g.error_host[k] = 0;
  const Plan& plan = engine_->plan();
  auto scalar = [&](int32_t k) {
    return k >= 0 && k < static_cast<int32_t>(plan.scalar_names.size())
               ? str_cat("runtime value s", k, " = ", plan.scalar_names[k])
               : str_cat("runtime value ", k);
  };
  switch (kind) {
    case kDeviceErrorPosition: {
      const bool known = which >= 0 && which < static_cast<int32_t>(plan.steps.size());
      const Step* s = known ? &plan.steps[which] : nullptr;
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
      const bool known = which >= 0 && which < static_cast<int32_t>(plan.inputs.size());
      const Binding* b = known ? &plan.inputs[which] : nullptr;
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

}  // namespace inplace
