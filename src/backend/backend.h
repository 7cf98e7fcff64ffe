// A backend turns a plan into an Executable and runs it: Backend::prepare(steps, options) ->
// Executable, then Executable::run(call) per call. The engine's ExecutionContext owns the
// bindings, the per-call refresh and the checks; everything a device adds (its queues, work
// recorded once and replayed, runtime values evaluated on the device, steps joined into one
// launch, scratch memory, errors its kernels flag) is private to its backend's Executable
// (docs/extending.md, "Adding a backend"). The cpu is a backend like any other
// (src/kernels/cpu/cpu_executable.cpp).
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/kernel_table.h"
#include "backend/plan.h"
#include "core/error.h"

namespace inplace {

// A context's prepared steps, in the context's own memory: operands point into its buffers
// (rebound in place when a binding moves), so the addresses stay valid while the context lives.
struct PreparedSteps {
  const Plan* plan = nullptr;
  Device device;
  const std::vector<std::vector<Value>>* args = nullptr;   // by step
  const std::vector<std::vector<Tensor>>* outs = nullptr;  // by step
  const std::vector<const Kernel*>* kernels = nullptr;     // by step (Engine::kernel)
};

// What one call hands its executable: where its work is ordered, what it is bound to, and the
// runtime values the host evaluated.
struct RunCall {
  // The backend's ordered queue of device work for this call (opaque; null: the backend's
  // default). The cpu ignores it.
  void* queue = nullptr;
  const std::vector<Tensor>* inputs = nullptr;  // the bound tensors, by input binding
  std::vector<const void*> input_data;          // where the kernels read each input (a staged copy
                                                // of a strided one)
  std::vector<const void*> output_data;         // by output buffer
  const std::vector<int64_t>* scalars = nullptr;  // the host's runtime values (by scalar)
  bool bindings_changed = true;                   // since the previous call (rebinding is rare)
};

// The context's side of a call, which the executable reports to.
class CallObserver {
 public:
  virtual ~CallObserver() = default;
  // Steps [first, last] failed with `e` (one launch may run several): throws the error the
  // caller sees, naming the steps and what the failed call left written.
  [[noreturn]] virtual void failed(size_t first, size_t last, const Error& e) = 0;
  // Per-step timing (INPLACE_PROFILE): when true, the executable runs steps one by one and
  // reports each one's time.
  virtual bool profiling() const = 0;
  virtual void step_time(size_t step, int64_t ns) = 0;
};

class Executable {
 public:
  virtual ~Executable() = default;
  // Called first by every call, before the context touches any memory: orders the call's work
  // after the previous call's (a call on another queue waits for it, on the device).
  virtual void begin_call(void* queue) = 0;
  // Runs every step of the plan on `call.queue`. Device work may still be in flight when it
  // returns; synchronize() waits for it.
  virtual void run(const RunCall& call, CallObserver& observer) = 0;
  // Waits for the last call's work and reports an error its kernels flagged (naming the step
  // and binding); with wait false, reports it only if that work has already completed.
  virtual void check_errors(bool wait) = 0;
  // A fresh contiguous copy of `t` (memory of the executable's device), ordered after the
  // last call's work.
  virtual Tensor copy(const Tensor& t) = 0;
  // Whether the executable evaluates the runtime values itself (on its device, every call):
  // the host then evaluates none, keeps those in fixed_scalars() at the value given there (the
  // others unread), and runs the refresh once instead of every call.
  virtual bool evaluates_scalars() const = 0;
  virtual const std::map<int, int64_t>& fixed_scalars() const = 0;
  // Whether the host may read the bound inputs' memory (to check positions before any write);
  // a device whose kernels check them instead says no.
  virtual bool host_reads_inputs() const = 0;
  // Inputs a call only reads, of at most this many bytes, are copied at every call into memory
  // the context keeps, so that their addresses stay the same from call to call while the caller
  // passes fresh tensors (a token, a position): work the executable recorded (a CUDA graph)
  // keeps reading them. 0: every contiguous input is read where the caller keeps it.
  virtual size_t stable_input_bytes() const { return 0; }
  // A backend option ("key=value" a backend documents); unknown keys are refused naming the
  // ones the backend takes.
  virtual void set_option(const std::string& key, const std::string& value) = 0;
  // What the executable counts (a backend's own names), for `stats`.
  virtual std::map<std::string, int64_t> counters() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::unique_ptr<Executable> prepare(const PreparedSteps& steps) const = 0;
  // Copies `nbytes` from `src` to `dst` (host or this backend's device memory), ordered on
  // `queue` after the work already there.
  virtual void copy_async(void* dst, const void* src, size_t nbytes, void* queue) const = 0;
  // What a step run on the host (Step::on_host) costs this backend beyond its copies, for the
  // compile-time warning; "" when nothing.
  virtual std::string host_step_note() const { return {}; }
  // The options set_option takes, "key=values: meaning" each (`inplace exec --help`).
  virtual std::vector<std::string> options() const = 0;
  // A setting of the backend for the whole process (the cpu's `blas_threads`: the threads of
  // the BLAS library its large products call); one it does not take is refused naming those it
  // does.
  virtual void set_process_option(const std::string& key, const std::string& value) const {
    IP_FAIL(kInvalidArgument, "[backend] unknown process option '", key, "' (value '", value,
            "'); this backend takes none");
  }
  // Ordered queues for callers that keep several calls in flight at once (sessions on several
  // queues): a new one (the backend's own handle; null on the cpu, whose work is done when a
  // call returns) and its release.
  virtual void* create_queue() const = 0;
  virtual void destroy_queue(void* queue) const = 0;
  // Waits on the host until the work already on `queue` is done (null: the default queue).
  virtual void synchronize(void* queue) const = 0;
  // Work enqueued on `queue` from now on starts after the work already on `after`, on the
  // device: the host does not wait. Nothing to do when they are the same queue.
  virtual void order_after(void* queue, void* after) const = 0;
};

// Registered with the kernels (register_cpu_backend, register_cuda_backend).
void register_backend(DeviceType device, std::unique_ptr<Backend> backend);
// The backend of `device`, or refused naming it.
const Backend& backend_for(Device device);

// A steady clock in nanoseconds (per-step times for CallObserver::step_time).
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Runs step q of `steps` with its kernel (the cpu's eager steps through eager_call), as every
// backend does for a step it does not launch in its own way. Errors propagate unchanged.
void run_step(const PreparedSteps& steps, size_t q, const KernelContext& ctx);
// The same on operands and results given apart from the prepared ones (a host step's copies).
void run_step_on(const Step& s, const Kernel* kernel, const std::vector<Value>& args,
                 const std::vector<Tensor>& outs, const KernelContext& ctx);

}  // namespace inplace
