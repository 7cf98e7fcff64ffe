// Engine: immutable once built — bindings, a flat list of steps, arena size, weights and the
// aliased I/O map. One engine is shared by many threads and execution contexts.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/kernel_table.h"
#include "backend/plan.h"
#include "engine/device_weights.h"
#include "engine/host_fallback.h"
#include "ir/graph.h"

namespace inplace {

// A dim of input binding `input` whose extent may change between calls, up to `max`.
struct DynamicDim {
  int input = 0;
  int64_t dim = 0;
  int64_t max = 0;
};
// The values every element of integer input `input` may take (checked on every call).
struct ValueRange {
  int input = 0;
  int64_t lo = 0, hi = 0;
};

struct EngineOptions {
  // false builds the copy-back engine: every mutated value is computed into fresh memory and
  // copied back into its input after the call (what ExportedProgram.module() does).
  bool alias = true;
  // The device the engine's kernels run on and its buffers live on. A step whose op has no
  // kernel there (KernelTable), or whose kernel refuses its arguments, runs on the host with
  // the copies it needs, named in a warning on stderr (host_fallback.h).
  Device device;
  // Refuse such a step instead, naming the node and the op.
  bool strict_device = false;
  std::vector<DynamicDim> dynamic_dims;
  std::vector<ValueRange> value_ranges;
  // Off the host: where the weights are uploaded, shared with the other engines built with it
  // (a program's methods); null uploads this engine's own copy.
  DeviceWeights* device_weights = nullptr;
  // The graph's last placeholders are bindings the engine prepares from caller bindings
  // (compiler/prepared_inputs.h): plan.prepared, in order.
  std::vector<PreparedInput> prepared;
};

class Engine {
 public:
  // Builds from a functional graph (the pass pipeline's result). Input bindings are the
  // placeholders in order; `example_inputs` (one per placeholder, real or meta tensors) fix
  // their shapes and dtypes (dynamic dims: options.dynamic_dims). No kernel runs: the plan is
  // built from metadata, and values read from integer inputs become runtime scalars.
  static std::shared_ptr<const Engine> build(const Graph& graph,
                                             const std::vector<Mutation>& mutations,
                                             int original_output_count,
                                             const std::vector<Tensor>& example_inputs,
                                             const EngineOptions& options = {});
  // Wraps a plan (e.g. loaded from a file) after checking it; `recorded` is a stored alias
  // map, reconciled with what the plan itself does (the plan wins for kv_cache_update; user
  // entries are kept).
  static std::shared_ptr<const Engine> from_plan(Plan plan, std::string name,
                                                 const std::vector<Mutation>& recorded,
                                                 DeviceWeights* device_weights = nullptr);

  const std::string& name() const { return name_; }
  const Plan& plan() const { return plan_; }
  Device device() const { return plan_.device; }
  // Step q's kernel on the engine's device, resolved at build or load: every kOut and kCopy
  // step, and kEager steps off the cpu; null for views and the cpu's eager steps.
  const Kernel* kernel(size_t step) const { return kernels_[step]; }
  // The weights where the kernels read them: plan().constants on the cpu, uploaded once per
  // engine (shared by every context) on another device.
  const std::vector<Tensor>& device_constants() const { return device_constants_; }
  // The bindings a caller binds (the plan's, less the ones the engine prepares itself).
  const std::vector<Binding>& inputs() const { return caller_inputs_; }
  const std::vector<Binding>& outputs() const { return plan_.outputs; }
  const std::vector<Mutation>& aliased_io() const { return plan_.aliased_io; }
  // Every input the engine writes: the aliased inputs, or the copy-back engine's write-backs.
  const std::vector<int>& mutated_inputs() const { return plan_.mutated_inputs; }
  int original_output_count() const { return plan_.original_output_count; }
  // Which input the engine's output writes in place (TensorRT's getAliasedInputTensor).
  std::optional<int> aliased_input(int output) const;
  bool input_is_aliased(int input) const;
  int input_index(const std::string& name) const;  // throws naming the binding
  int64_t weight_bytes() const;
  // The steps that run on the host because the device cannot (host_fallback.h).
  const std::vector<HostStep>& host_steps() const { return host_steps_; }
  // Steps, bindings, aliased I/O with kinds, steps on the host, arena bytes: `inplace plan`.
  std::string describe() const;

 private:
  // Resolves every step's kernel on the plan's device (the cpu's for a step on the host) and
  // uploads the weights there (through `device_weights` when given, shared by the methods of a
  // program); refuses a device that is not available and any other step with no kernel for it
  // (engine_device.cpp).
  Engine(Plan plan, std::string name, DeviceWeights* device_weights);
  Plan plan_;
  std::string name_;
  std::vector<const Kernel*> kernels_;
  std::vector<Tensor> device_constants_;
  std::vector<HostStep> host_steps_;
  std::vector<Binding> caller_inputs_;
};

// What the plan itself writes in place: output j is input i when its result is the whole
// input binding and a step writes that binding; the kind is kv_cache_update when that step is.
std::vector<Mutation> derive_aliased_io(const Plan& plan);
// Plan-derived entries win for kv_cache_update; recorded user entries are kept. Derived user
// entries are not added (a copy-back write looks the same; only the record knows).
std::vector<Mutation> reconcile_aliased_io(const std::vector<Mutation>& derived,
                                           const std::vector<Mutation>& recorded);
// Throws kCorrupt naming the step when a plan refers to buffers or bindings it does not have.
void validate_plan(const Plan& plan);

}  // namespace inplace
