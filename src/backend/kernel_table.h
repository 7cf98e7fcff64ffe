// The kernel table: compute keyed by (op, device), the model of ExecuTorch's kernel registry
// and ggml's backend interface. src/ops holds schemas, shape rules and properties; compute is
// registered here per device, each backend from its own folder: the cpu's from src/kernels/cpu,
// a GPU's from src/kernels/<device>/ (register_builtin_backends below). Kernels are resolved once,
// when an engine is built or loaded (Engine::kernel), never per call. An op with no kernel for an
// engine's device runs on the host with the copies it needs (Step::on_host), or is refused in
// strict mode, at compile time.
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

// What a kernel launch needs besides its operands.
struct KernelContext {
  // The call's queue of device work (RunCall::queue, backend/backend.h); the cpu's kernels finish
  // before they return and ignore it.
  void* queue = nullptr;
  int32_t step = -1;  // the plan step being run (-1 outside an executable)
  // The backend's own data for this step (what its executable lends its kernels: scratch, an
  // error flag, values it evaluated), or null for a kernel called outside an executable.
  const void* backend = nullptr;
};

// Computes op(args) into `outs` (planned memory on the kernel's device), like OpDef::out.
using Kernel = std::function<void(const Args&, const std::vector<Tensor>&, const KernelContext&)>;

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
  // dst <- src (broadcast to dst's shape, cast to its dtype): the engine's copy-back step.
  void add_copy(DeviceType device, Kernel kernel);
  // How many devices of `device`'s type this machine has (asked when one is needed).
  void add_device_count(DeviceType device, std::function<int()> count);

  const Kernel* find(const OpDef& op, DeviceType device) const;
  const EagerKernel* find_eager(const OpDef& op, DeviceType device) const;
  const Supports* supports(const OpDef& op, DeviceType device) const;  // null: every form
  const Kernel* copy_kernel(DeviceType device) const;
  // Full names of the ops with a kernel on `device`, sorted (`inplace ops --device`).
  std::vector<std::string> covered(DeviceType device) const;
  // Devices of that type on this machine; -1 when no backend of this build serves it.
  int device_count(DeviceType device) const;

 private:
  struct PerDevice {
    std::unordered_map<const OpDef*, Kernel> kernels;
    std::unordered_map<const OpDef*, EagerKernel> eager;
    std::unordered_map<const OpDef*, Supports> supports;
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
