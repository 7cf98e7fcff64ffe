// conv1d (every streaming ASR front end): torch.nn.functional.conv1d / aten.conv1d with int or
// string ('valid' / 'same') padding, stride, dilation and groups, batched [N, C, L] or unbatched
// [C, L]; and aten.convolution (what make_fx records) when it is a plain 1-d convolution.
// Arguments are decoded by ops/conv_args.h, which the kernels read too.
#include <string>

#include "ops/conv_args.h"
#include "ops/registry.h"

namespace inplace {

namespace {

constexpr const char* kOp = "conv1d";

// Args: input, weight, bias, stride, padding, dilation, groups (at these indices).
std::vector<Tensor> infer_conv1d(const Args& a) {
  const conv::Conv1dCall c =
      conv::conv1d_plan(a[0].as_tensor(kOp), a[1].as_tensor(kOp), a[2], a[3], a[4], a[5], a[6]);
  return std::vector<Tensor>{Tensor::meta(c.out_shape, c.dtype)};
}

}  // namespace

void register_conv_ops(Registry& r) {
  r.add_out(
      "conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, "
      "SymInt[1] padding=0, SymInt[1] dilation=1, SymInt groups=1) -> Tensor",
      infer_conv1d, nullptr);
  r.add_out(
      "conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, "
      "str padding=\"valid\", SymInt[1] dilation=1, SymInt groups=1) -> Tensor",
      infer_conv1d, nullptr);
  // aten.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
  // groups): the 1-d, non-transposed case.
  r.add_out(
      "convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
      "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
      [](const Args& raw) { return infer_conv1d(conv::convolution_as_conv1d(raw)); }, nullptr);
}

}  // namespace inplace
