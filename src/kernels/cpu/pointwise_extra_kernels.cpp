// The cpu kernels of addcmul / addcdiv / lerp and the clamping activations hardtanh /
// leaky_relu (every overload: name.nn_functional too, whose inplace flag is read eagerly only),
// registered into the kernel table.
#include "kernels/cpu/pointwise_extra.h"
#include "kernels/cpu/registration.h"

namespace inplace::cpu {

void register_pointwise_extra_kernels(KernelTable& t) {
  constexpr DeviceType kCpu = DeviceType::kCpu;
  for (const bool mul : {true, false}) {
    const char* op = mul ? "addcmul" : "addcdiv";
    t.add(kCpu, op, [=](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
      auto f = mul ? addcmul : addcdiv;
      f(out[0], a[0].as_tensor(op), a[1].as_tensor(op), a[2].as_tensor(op), a[3].as_scalar(op));
    });
  }
  t.add(kCpu, "lerp.Scalar",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          lerp(out[0], a[0].as_tensor("lerp"), a[1].as_tensor("lerp"), Tensor(),
               a[2].as_scalar("lerp"));
        });
  t.add(kCpu, "lerp.Tensor",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          lerp(out[0], a[0].as_tensor("lerp"), a[1].as_tensor("lerp"), a[2].as_tensor("lerp"),
               Scalar());
        });
  t.add(kCpu, "hardtanh", [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    hardtanh(out[0], a[0].as_tensor("hardtanh"), a[1].as_scalar("hardtanh"),
             a[2].as_scalar("hardtanh"));
  });
  t.add(kCpu, "leaky_relu",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          leaky_relu(out[0], a[0].as_tensor("leaky_relu"), a[1].as_scalar("leaky_relu"));
        });
}

}  // namespace inplace::cpu
