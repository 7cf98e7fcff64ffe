// ExecutionContext: one per caller or session — its arena and the addresses bound to inputs
// and outputs. Bind, then execute; execute() runs the prepared steps with no graph walk, no
// lookup by name and no allocation of intermediates. A context serves one call at a time
// (another thread's concurrent call is refused); many contexts may share one engine.
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/thread_pool.h"
#include "engine/engine.h"
#include "engine/execution_context_profile.h"

namespace inplace {

// What a context counts (ExecutionContext::stats()).
struct ContextStats {
  int64_t calls = 0;
  // Runtime values the host evaluated by reading input memory its backend does not keep on
  // the host (a position read back from a device, once per call).
  int64_t host_scalar_reads = 0;
  // Inputs copied into the context's memory at each call: strided ones, and small read-only
  // ones the caller binds at a new address each call (where the backend keeps addresses
  // stable for recorded work; an input that stays where it is bound is read in place).
  int64_t staged_inputs = 0;
  // Prepared bindings made (Plan::prepared: once, then after each change of their source).
  int64_t prepared_inputs = 0;
  // What the context's backend counts, in the backend's own names (docs/extending.md).
  std::map<std::string, int64_t> backend;
  int64_t counter(const std::string& name) const {
    auto it = backend.find(name);
    return it == backend.end() ? 0 : it->second;
  }
};

class ExecutionContext {
 public:
  explicit ExecutionContext(std::shared_ptr<const Engine> engine);
  ~ExecutionContext();

  const Engine& engine() const { return *engine_; }

  // Binds a caller tensor to input `index` without copying. Shape and dtype must match the
  // binding (a dynamic dim may be anything up to its maximum); an input the engine writes in place
  // must also be contiguous (anything else is an error naming the binding and both shapes, never a
  // silent copy that would lose the write). Other non-contiguous inputs are gathered into context
  // memory at every execute(), so every input is read when the call runs, whatever its strides.
  // Rebinding an input that a failed call left partly updated makes it usable again.
  void bind_input(int index, const Tensor& tensor);
  void bind_input(const std::string& name, const Tensor& tensor);
  // The caller wrote into the tensor bound to input `index` in place (the binding stays): what
  // the engine prepares from it (Plan::prepared, a weight's transposed copy) is made again
  // before the next call. Binding another tensor does the same; binding the same one does not.
  void input_written(int index);
  // Optional: results of output `index` are written into `tensor` (same shape, dtype,
  // contiguous). Not allowed for aliased outputs, which are always the input's own tensor.
  void bind_output(int index, const Tensor& tensor);
  // Reuse one set of output tensors across calls instead of allocating them per call. Engines
  // with aliased I/O keep this off (with a warning on stderr), as Torch-TensorRT does.
  void set_reuse_outputs(bool reuse);

  // Runs the engine. Returns every engine output; an aliased output is the very tensor bound
  // to its input (same storage, same address). Refused when a binding the engine writes (a
  // mutated input, a bound output) overlaps the memory of another binding. When a step fails
  // after the call wrote caller inputs (aliased engine), the error names them and the context
  // refuses further calls until they are rebound or reset() is called.
  std::vector<Tensor> execute() { return execute(nullptr); }
  // The same, with the call's work ordered on `queue`, a handle of the engine's backend (its
  // ordered queue of device work; docs/extending.md says what each backend takes; null is the
  // backend's default). A device's outputs are ready when the queue reaches this point; the
  // call itself does not wait for the device, except to read runtime values (positions) the
  // backend does not evaluate itself. A call on another queue than the previous call's starts
  // on the device after that call's work (they share the context's memory). The cpu ignores it.
  std::vector<Tensor> execute(void* queue);
  // An option of the engine's backend (each backend's are listed in docs/extending.md); one
  // the backend does not take is refused naming the ones it does.
  void set_backend_option(const std::string& key, const std::string& value);
  // Waits until the last call's work is done on the device, then reports an error its kernels
  // flagged (a position outside a cache, a runtime value outside its declared range), naming
  // the step and the binding. A cpu engine returns at once. execute() reports such an error at
  // its start when the previous call has already completed (never waiting for it).
  void synchronize();
  ContextStats stats() const;

  // Accepts the state of the inputs a failed call left partly updated (the caller restored or
  // dropped them) and makes the context usable again. Bindings are kept.
  void reset();

  // Kernels of this context's calls share `threads` threads (the caller's included); the
  // workers are created here, never during a call. Default 1: everything on the calling thread.
  void set_threads(int threads);
  // The same, with a pool other contexts share (a session's methods: one call at a time).
  void share_threads(std::shared_ptr<ThreadPool> pool);
  int threads() const { return thread_pool_ ? thread_pool_->threads() : 1; }

  int64_t arena_bytes() const { return engine_->plan().arena_bytes; }
  // The inputs a failed call left partly updated (sorted), until they are rebound or reset().
  const std::vector<int>& partly_updated() const { return partly_updated_; }

  // A fresh contiguous copy of `t` on the engine's device (ordered after the last call's work).
  // A device context's outputs are its own buffers, valid until its next call; this is how a
  // caller keeps one longer (the Python package does).
  Tensor clone_on_device(const Tensor& t) const;

 private:
  Tensor make_tensor(const TensorRef& r) const;
  std::shared_ptr<Storage>& storage_of(BufferId id);
  const std::shared_ptr<Storage>& buffer_storage(BufferId id) const;
  // The per-call work before the first kernel (refresh.cpp): runtime scalars, the metadata of
  // every dynamic value, and the operands of the steps that use them. Throws before any write.
  void refresh();
  void refresh_step(int q);
  int64_t read_input_element(int64_t input, int64_t element) const;
  // `r` with this call's offset, shape and strides when it is dynamic.
  TensorRef current(const TensorRef& r) const;
  // Runtime contract (binding_checks.h): overlap check once per change of bindings, the
  // per-call gather of staged inputs, the state a failed call leaves.
  void check_bindings();
  const std::string& output_name_of_buffer(size_t k) const;
  void gather_staged_inputs();
  // Prepared bindings (Plan::prepared) made from their sources where stale.
  void make_prepared_inputs();
  void mark_prepared_stale(int source);
  // Steps before `first` are done, steps first..last failed (a backend may run several as one).
  std::string note_failed_call(size_t first, size_t last);

  std::shared_ptr<const Engine> engine_;
  std::shared_ptr<ThreadPool> thread_pool_;
  std::unique_ptr<StepProfile> profile_;  // INPLACE_PROFILE set: per-op times, printed at exit
  Device device_;
  std::shared_ptr<Storage> arena_;
  std::vector<std::shared_ptr<Storage>> input_storage_, output_storage_, arena_storage_;
  std::vector<Tensor> bound_inputs_, staged_inputs_, bound_outputs_, reused_outputs_;
  std::vector<bool> input_staged_;
  std::vector<bool> input_moved_;     // bound at a new address once: staged from then on
  std::vector<int> rebound_inputs_;   // read-only inputs bound since the last full check
  std::vector<Tensor> staging_;       // a staged input's memory, at the binding's bound
  std::vector<bool> prepared_stale_;  // by Plan::prepared entry: made again before the next call
  std::vector<bool> input_viewed_by_output_;
  bool reuse_outputs_ = false;
  // Prepared per step: arguments with tensors filled in, and results.
  std::vector<std::vector<Value>> step_args_;
  std::vector<std::vector<Tensor>> step_outs_;
  // Runtime values of the current call.
  std::vector<int64_t> scalar_values_;
  std::vector<Tensor> dyn_metas_;  // by dynamic value; undefined when absent this call
  std::vector<std::vector<Value>> refresh_args_;  // by step: metadata arguments, reused
  std::vector<int> stop_dims_;  // by step: runtime_stop_dim, or -1 (refresh_slice.h)
  // kv_cache_update steps whose positions are inputs: validated before the first kernel, so a
  // bad position refuses the call before any cache (the k cache before the v cache) is written.
  std::vector<int> position_checks_;
  void check_positions();
  // The context's side of a call (backend/backend.h): names failed steps, times steps.
  class Observer;
  friend class Observer;
  std::vector<const Kernel*> kernels_;      // by step (Engine::kernel)
  std::unique_ptr<Executable> executable_;  // the engine's backend, prepared for this context
  RunCall call_;                            // reused by every call
  bool refreshed_ = false;  // the refresh ran (once, when the backend evaluates the scalars)
  ContextStats stats_;
  std::atomic<bool> in_flight_{false};
  std::vector<bool> input_written_;  // by some step: aliased, or written back (copy-back)
  bool bindings_checked_ = false;    // the overlap check passed for the current bindings
  std::vector<int> partly_updated_;  // inputs a failed call wrote, until rebound or reset()
};

}  // namespace inplace
