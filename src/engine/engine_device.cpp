// Engine construction on its device: kernels resolved per step from the kernel table (once,
// never per call) and weights uploaded once. A step marked to run on the host (Step::on_host,
// host_fallback.h) takes the cpu's kernel; any other step its device cannot run is refused.
#include "core/device_allocator.h"
#include "engine/engine.h"
#include "engine/host_fallback.h"

namespace inplace {

Engine::Engine(Plan plan, std::string name, DeviceWeights* device_weights)
    : plan_(std::move(plan)), name_(std::move(name)) {
  caller_inputs_.assign(plan_.inputs.begin(), plan_.inputs.begin() + plan_.caller_inputs());
  const Device device = plan_.device;
  const KernelTable& table = KernelTable::get();
  std::string why;
  // A device this build has no backend for is named first; then every op is checked for a
  // kernel there (no such device is needed to learn that); then the device must be present.
  IP_CHECK(has_device_allocator(device.type) || device_available(device, &why), kUnsupported,
           "[engine] '", name_, "' targets device '", device.str(), "': ", why);
  const char* type = device_type_name(device.type);
  kernels_.assign(plan_.steps.size(), nullptr);
  for (size_t q = 0; q < plan_.steps.size(); ++q) {
    const Step& s = plan_.steps[q];
    if (s.on_host) {
      IP_CHECK((s.kind == StepKind::kOut || s.kind == StepKind::kEager) && s.op, kCorrupt,
               "[engine] node '", s.node, "': only a step with an op may run on the host");
      // The cpu runs eager steps through eager_call; every planned op has a cpu kernel.
      if (s.kind == StepKind::kOut) {
        kernels_[q] = table.find(*s.op, DeviceType::kCpu);
        IP_CHECK(kernels_[q] != nullptr, kUnsupported, "[engine] node '", s.node, "': op '",
                 s.op->schema.full_name(), "' has no kernel on the host either");
      }
      continue;
    }
    switch (s.kind) {
      case StepKind::kOut:
      case StepKind::kEager: {
        const std::string why_not = why_not_on_device(table, s, device);
        IP_CHECK(why_not.empty(), kUnsupported, "[engine] node '", s.node, "': op '",
                 s.op->schema.full_name(), "' ", why_not, " (`inplace ops --device ", type,
                 "` lists the ops it covers)");
        // The cpu runs eager steps through eager_call; another device needs a kernel for them.
        if (s.kind == StepKind::kOut || !device.is_cpu())
          kernels_[q] = table.find(*s.op, device.type);
        break;
      }
      case StepKind::kCopy:
        kernels_[q] = table.copy_kernel(device.type);
        IP_CHECK(kernels_[q] != nullptr, kUnsupported, "[engine] node '", s.node, "': device '",
                 device.str(), "' has no copy kernel");
        break;
      case StepKind::kView:
        break;
    }
  }
  host_steps_ = inplace::host_steps(plan_);
  IP_CHECK(device_available(device, &why), kUnsupported, "[engine] '", name_, "' targets device '",
           device.str(), "': ", why);
  if (device.is_cpu()) {
    device_constants_ = plan_.constants;
    return;
  }
  // The whole storage moves, so every constant ref's element offset stays valid.
  for (const Tensor& c : plan_.constants) {
    if (!c.defined() || c.is_meta()) {
      device_constants_.push_back(c);
      continue;
    }
    IP_CHECK(c.device().is_cpu(), kInvalidArgument, "[engine] '", name_, "': weight on device '",
             c.device().str(), "'; an engine takes its weights from the host and uploads them");
    auto storage = device_weights ? device_weights->upload(c.storage(), device)
                                  : upload_storage(c.storage(), device);
    device_constants_.emplace_back(storage, c.offset(), c.shape(), c.strides(), c.dtype());
  }
}

}  // namespace inplace
