#include "backend/backend.h"

#include <array>

#include "backend/eager_call.h"

namespace inplace {

namespace {

std::array<std::unique_ptr<Backend>, kNumDeviceTypes>& backends() {
  static std::array<std::unique_ptr<Backend>, kNumDeviceTypes> b;
  return b;
}

}  // namespace

void register_backend(DeviceType device, std::unique_ptr<Backend> backend) {
  backends()[static_cast<int>(device)] = std::move(backend);
}

const Backend& backend_for(Device device) {
  KernelTable::get();  // registers every compiled-in backend
  const std::unique_ptr<Backend>& b = backends()[static_cast<int>(device.type)];
  IP_CHECK(b != nullptr, kUnsupported, "[backend] device '", device.str(),
           "' has no backend in this build");
  return *b;
}

void run_step(const PreparedSteps& steps, size_t q, const KernelContext& ctx) {
  run_step_on(steps.plan->steps[q], (*steps.kernels)[q], (*steps.args)[q], (*steps.outs)[q], ctx);
}

void run_step_on(const Step& s, const Kernel* kernel, const std::vector<Value>& args,
                 const std::vector<Tensor>& outs, const KernelContext& ctx) {
  switch (s.kind) {
    case StepKind::kOut:
    case StepKind::kCopy:
      (*kernel)(args, outs, ctx);
      return;
    case StepKind::kView:
      return;
    case StepKind::kEager: {
      if (kernel) {  // a device's kernel
        (*kernel)(args, outs, ctx);
        return;
      }
      std::vector<Value> leaves;
      flatten_value(eager_call(*s.op, args), &leaves);
      IP_ASSERT(leaves.size() == outs.size(), "eager step returns the planned results");
      for (size_t k = 0; k < outs.size(); ++k) outs[k].copy_from(leaves[k].tensor);
      return;
    }
  }
}

}  // namespace inplace
