#include "backend/kernel_table.h"

#include <algorithm>

#include "core/error.h"

namespace inplace {

namespace {

// The ops whose cpu compute still sits in their declaration (OpDef::out): wrapped until their
// family's kernels move to src/kernels/cpu (TODO issue 28 step 1; scripts/layer_check.sh lists
// them). A kernel registered by the cpu backend wins.
void register_declared_out_kernels(KernelTable& table) {
  for (const OpDef* op : Registry::get().all()) {
    if (!op->out || table.find(*op, DeviceType::kCpu)) continue;
    table.add_one(DeviceType::kCpu, *op,
                  [op](const Args& args, const std::vector<Tensor>& outs, const KernelContext&) {
                    op->out(args, outs);
                  });
  }
}

}  // namespace

const KernelTable& KernelTable::get() {
  static const KernelTable table = [] {
    KernelTable t;
    register_builtin_backends(t);
    register_declared_out_kernels(t);
    return t;
  }();
  return table;
}

void KernelTable::add(DeviceType device, const std::string& name, Kernel kernel,
                      Supports supports) {
  const Registry& registry = Registry::get();
  std::vector<const OpDef*> ops;
  if (const OpDef* one = registry.find(name); one && name.find('.') != std::string::npos)
    ops.push_back(one);
  else
    ops = registry.overloads(name);
  IP_ASSERT(!ops.empty(), "kernels are registered for registered ops");
  for (const OpDef* op : ops) {
    devices_[static_cast<int>(device)].kernels[op] = kernel;
    if (supports) devices_[static_cast<int>(device)].supports[op] = supports;
  }
}

void KernelTable::add_one(DeviceType device, const OpDef& op, Kernel kernel) {
  devices_[static_cast<int>(device)].kernels[&op] = std::move(kernel);
}

void KernelTable::add_eager(DeviceType device, const std::string& name, EagerKernel kernel) {
  const Registry& registry = Registry::get();
  std::vector<const OpDef*> ops;
  if (const OpDef* one = registry.find(name); one && name.find('.') != std::string::npos)
    ops.push_back(one);
  else
    ops = registry.overloads(name);
  IP_ASSERT(!ops.empty(), "eager kernels are registered for registered ops");
  for (const OpDef* op : ops) devices_[static_cast<int>(device)].eager[op] = kernel;
}

const EagerKernel* KernelTable::find_eager(const OpDef& op, DeviceType device) const {
  const auto& eager = devices_[static_cast<int>(device)].eager;
  auto it = eager.find(&op);
  return it == eager.end() ? nullptr : &it->second;
}

void KernelTable::add_copy(DeviceType device, Kernel kernel) {
  devices_[static_cast<int>(device)].copy = std::move(kernel);
}

void KernelTable::add_device_count(DeviceType device, std::function<int()> count) {
  devices_[static_cast<int>(device)].device_count = std::move(count);
}

int KernelTable::device_count(DeviceType device) const {
  const auto& count = devices_[static_cast<int>(device)].device_count;
  return count ? count() : -1;
}

const Kernel* KernelTable::find(const OpDef& op, DeviceType device) const {
  const auto& kernels = devices_[static_cast<int>(device)].kernels;
  auto it = kernels.find(&op);
  return it == kernels.end() ? nullptr : &it->second;
}

const Supports* KernelTable::supports(const OpDef& op, DeviceType device) const {
  const auto& s = devices_[static_cast<int>(device)].supports;
  auto it = s.find(&op);
  return it == s.end() ? nullptr : &it->second;
}

const Kernel* KernelTable::copy_kernel(DeviceType device) const {
  const Kernel& k = devices_[static_cast<int>(device)].copy;
  return k ? &k : nullptr;
}

std::vector<std::string> KernelTable::covered(DeviceType device) const {
  std::vector<std::string> names;
  for (const auto& [op, kernel] : devices_[static_cast<int>(device)].kernels)
    names.push_back(op->schema.full_name());
  std::sort(names.begin(), names.end());
  return names;
}

bool device_available(Device device, std::string* why) {
  if (device.is_cpu()) return true;
  const int n = KernelTable::get().device_count(device.type);
  if (device.index >= 0 && device.index < n) return true;
  if (why) {
    if (n < 0)
      *why = "this build has no CUDA backend (nvcc was not found when it was configured)";
    else
      *why = n == 0 ? "no CUDA device is present on this machine"
                    : str_cat("this machine has ", n, " CUDA device(s)");
  }
  return false;
}

}  // namespace inplace
