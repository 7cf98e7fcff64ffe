// The cpu kernels of conv1d and aten.convolution (its 1-d form), registered into the kernel
// table; arguments are decoded by ops/conv_args.h.
#include "kernels/cpu/conv.h"
#include "kernels/cpu/registration.h"
#include "ops/conv_args.h"

namespace inplace::cpu {

namespace {

constexpr const char* kOp = "conv1d";

// Args: input, weight, bias, stride, padding, dilation, groups (at these indices).
void run_conv1d(const Args& a, const Tensor& out) {
  const Tensor& x = a[0].as_tensor(kOp);
  const Tensor& w = a[1].as_tensor(kOp);
  const conv::Conv1dCall c = conv::conv1d_plan(x, w, a[2], a[3], a[4], a[5], a[6]);
  Tensor b = a[2].is_none() ? Tensor() : a[2].as_tensor(kOp);
  if (c.batched) {
    conv1d(out, x, w, b, c.p);
  } else {
    conv1d(out.unsqueeze(0), x.unsqueeze(0), w, b, c.p);
  }
}

}  // namespace

void register_conv_kernels(KernelTable& t) {
  t.add(DeviceType::kCpu, "conv1d",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          run_conv1d(a, out[0]);
        });
  t.add(DeviceType::kCpu, "convolution",
        [](const Args& raw, const std::vector<Tensor>& out, const KernelContext&) {
          run_conv1d(conv::convolution_as_conv1d(raw), out[0]);
        });
}

}  // namespace inplace::cpu
