// Engine construction on its device: kernels resolved per step from the kernel table (once,
// never per call) and weights uploaded once. No step falls back to another device.
#include "core/device_allocator.h"
#include "engine/engine.h"
#include "engine/op_meta.h"

namespace inplace {

namespace {

// Why the kernel cannot run step `s`'s argument forms ("" when it can), asked over metas.
std::string unsupported_form(const KernelTable& table, const Step& s, DeviceType device) {
  const Supports* supports = table.supports(*s.op, device);
  if (!supports) return "";
  std::vector<Value> args = s.args;
  for (const TensorSlot& t : s.tensors)
    leaf_at(args, t.path)->tensor =
        Tensor::meta(t.ref.shape, t.ref.dtype, t.ref.strides, t.ref.offset);
  return (*supports)(args);
}

}  // namespace

Engine::Engine(Plan plan, std::string name, DeviceWeights* device_weights)
    : plan_(std::move(plan)), name_(std::move(name)) {
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
    switch (s.kind) {
      case StepKind::kOut:
        kernels_[q] = table.find(*s.op, device.type);
        IP_CHECK(kernels_[q] != nullptr, kUnsupported, "[engine] node '", s.node, "': op '",
                 s.op->schema.full_name(), "' has no kernel for device '", device.str(),
                 "' (`inplace ops --device ", type, "` lists the ops it covers)");
        if (std::string why_not = unsupported_form(table, s, device.type); !why_not.empty())
          IP_FAIL(kUnsupported, "[engine] node '", s.node, "': op '", s.op->schema.full_name(),
                  "' has no kernel for device '", device.str(), "' for these arguments: ", why_not);
        break;
      case StepKind::kCopy:
        kernels_[q] = table.copy_kernel(device.type);
        IP_CHECK(kernels_[q] != nullptr, kUnsupported, "[engine] node '", s.node, "': device '",
                 device.str(), "' has no copy kernel");
        break;
      case StepKind::kEager:
        // The cpu runs these through eager_call; another device needs a kernel for them.
        if (device.is_cpu()) break;
        kernels_[q] = table.find(*s.op, device.type);
        IP_CHECK(kernels_[q] != nullptr, kUnsupported, "[engine] node '", s.node, "': op '",
                 s.op->schema.full_name(), "' has no kernel for device '", device.str(),
                 "' (`inplace ops --device ", type, "` lists the ops it covers)");
        break;
      case StepKind::kView:
        break;
    }
  }
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
