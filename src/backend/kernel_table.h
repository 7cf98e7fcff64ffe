// The kernel table: compute keyed by (op, device), the model of ExecuTorch's kernel registry
// and ggml's backend interface. src/ops holds schemas, shape rules and properties; compute is
// registered here per device, each backend from its own folder: the cpu's from src/kernels/cpu,
// a GPU's from src/kernels/<device>/ (register_builtin_backends below). Kernels are resolved once,
// when an engine is built or loaded (Engine::kernel), never per call. An op with no kernel for an
// engine's device is refused at compile time; nothing falls back to another device.
#pragma once
#include <array>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/device.h"
#include "ops/registry.h"

namespace inplace {

// What a kernel launch needs besides its operands: the stream work is enqueued on
// (cudaStream_t for cuda; unused on the cpu, whose kernels finish before they return).
struct KernelContext {
  void* stream = nullptr;
  // On a GPU: the context's error flag (int32[4] device memory, backend/device_runtime.h) that
  // index kernels set for a position outside the indexed dim, and the step it names.
  int32_t* error = nullptr;
  int32_t step = -1;
  // On a GPU: the step's key count as a device int64 (a runtime scalar evaluated on the
  // device), when the key and value operands are planned at their bound (engine/device_scalars.h).
  const int64_t* extent = nullptr;
  // On a GPU: the context's device scratch (the general attention path's split partials,
  // cuBLAS's workspace), or null for a kernel called outside a context.
  class Workspace* workspace = nullptr;
};

// Device scratch that a context owns and lends to its kernels, in a few slots (a backend's
// kernels number their own: kinds of scratch that may be in use at once). A context's calls
// never overlap on the device and its steps run in order, so a kernel may use a slot as its own
// while it runs. A slot is allocated at its first request, which a context's first call (run
// directly, before any graph capture) makes; its address never changes after, as a captured
// graph needs.
class Workspace {
 public:
  static constexpr int kSlots = 4;
  virtual ~Workspace() = default;
  // At least `bytes` in slot `slot` (< kSlots); a request larger than the slot's first is
  // refused (its address is fixed).
  virtual void* get(int slot, size_t bytes) = 0;
};

// Computes op(args) into `outs` (planned memory on the kernel's device), like OpDef::out.
using Kernel = std::function<void(const Args&, const std::vector<Tensor>&, const KernelContext&)>;
// Two independent steps of one op in one launch (a decoder layer's two kv_cache_update steps,
// k and v): computes op(a1) into o1 and op(a2) into o2 exactly as two calls of the op's kernel
// would. The engine pairs adjacent steps on a GPU when neither reads or writes what the other
// writes (ExecutionContext; on a GPU each launch costs a few microseconds whatever it moves).
using PairKernel =
    std::function<void(const Args& a1, const std::vector<Tensor>& o1, const KernelContext& c1,
                       const Args& a2, const std::vector<Tensor>& o2, const KernelContext& c2)>;

// One step's operands, results and launch context.
struct StepCall {
  const Args* args = nullptr;
  const std::vector<Tensor>* outs = nullptr;
  KernelContext ctx;
};
// A product step and the row writes right after it that read its result (a decoder layer's
// q/k/v GEMV, then its k and v kv_cache_update into the caches) in one launch: computes the
// product and, from its epilogue, does each write exactly as the steps in order would. Returns
// false, having launched nothing, when the operands are not a form it fuses; the engine then
// runs the steps one by one. At most kMaxEpilogueWrites writes.
constexpr int kMaxEpilogueWrites = 2;
using WritesKernel = std::function<bool(const StepCall& product, const StepCall* writes, int n)>;

// An op whose result is not planned ahead (a cast that returns self when nothing changes, a
// mutating copy_ / fill_): computes and returns it as OpDef::eager would (on the cpu only).
using EagerKernel = std::function<Value(const Args&)>;

// For a kernel that covers only some argument forms: "" when it runs `args` (tensors are
// metas), else what it does not support. Asked once per step when an engine is built.
using Supports = std::function<std::string(const Args&)>;

class KernelTable {
 public:
  // Built once, on first use: every backend this build has (register_builtin_backends).
  static const KernelTable& get();

  // Registers `kernel` for every overload of `name` ("add") or for one ("add.Tensor").
  void add(DeviceType device, const std::string& name, Kernel kernel, Supports supports = {});
  // `kernel` for `op` alone (not its other overloads).
  void add_one(DeviceType device, const OpDef& op, Kernel kernel);
  // An eager kernel for every overload of `name` (or for one).
  void add_eager(DeviceType device, const std::string& name, EagerKernel kernel);
  // A pair kernel for every overload of `name` (registered with add before).
  void add_pair(DeviceType device, const std::string& name, PairKernel kernel);
  // A kernel for a step of `product` followed by steps of `write` (every overload of each).
  void add_epilogue_writes(DeviceType device, const std::string& product, const std::string& write,
                           WritesKernel kernel);
  // dst <- src (broadcast to dst's shape, cast to its dtype): the engine's copy-back step.
  void add_copy(DeviceType device, Kernel kernel);
  // How many devices of `device`'s type this machine has (asked when one is needed).
  void add_device_count(DeviceType device, std::function<int()> count);

  const Kernel* find(const OpDef& op, DeviceType device) const;
  const EagerKernel* find_eager(const OpDef& op, DeviceType device) const;
  const Supports* supports(const OpDef& op, DeviceType device) const;  // null: every form
  const PairKernel* find_pair(const OpDef& op, DeviceType device) const;
  const Kernel* copy_kernel(DeviceType device) const;
  const WritesKernel* find_epilogue_writes(const OpDef& product, const OpDef& write,
                                           DeviceType device) const;
  // Full names of the ops with a kernel on `device`, sorted (`inplace ops --device`).
  std::vector<std::string> covered(DeviceType device) const;
  // Devices of that type on this machine; -1 when no backend of this build serves it.
  int device_count(DeviceType device) const;

 private:
  struct PerDevice {
    std::unordered_map<const OpDef*, Kernel> kernels;
    std::unordered_map<const OpDef*, EagerKernel> eager;
    std::unordered_map<const OpDef*, Supports> supports;
    std::unordered_map<const OpDef*, PairKernel> pairs;
    std::map<std::pair<const OpDef*, const OpDef*>, WritesKernel> epilogue_writes;
    Kernel copy;
    std::function<int()> device_count;
  };
  std::array<PerDevice, kNumDeviceTypes> devices_;
};

// Whether this build serves `device` and the machine has it; when not, `why` says which.
bool device_available(Device device, std::string* why = nullptr);

// Registers every backend this build has into `table`; KernelTable::get() calls it once. It is
// defined above the backends (src/kernels/builtin_backends.cpp), which the backend layer does not
// know: the one place that names them, so that a static link keeps them all.
void register_builtin_backends(KernelTable& table);

}  // namespace inplace
