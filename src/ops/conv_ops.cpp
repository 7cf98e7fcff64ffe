// conv1d (every streaming ASR front end): torch.nn.functional.conv1d / aten.conv1d with int or
// string ('valid' / 'same') padding, stride, dilation and groups, batched [N, C, L] or unbatched
// [C, L]; and aten.convolution (what make_fx records) when it is a plain 1-d convolution.
// Kernel: kernels/cpu/conv.
#include <string>

#include "kernels/cpu/conv.h"
#include "ops/registry.h"

namespace inplace {

namespace {

constexpr const char* kOp = "conv1d";

int64_t one_int(const Value& v, const char* what) {
  std::vector<int64_t> xs = v.as_int_list(kOp);
  IP_CHECK(xs.size() == 1, kInvalidArgument, "[conv1d] ", what, " must be one int, got ", xs.size(),
           " values");
  return xs[0];
}

// Shapes and parameters of one call; left padding in params, right padding separately.
struct Conv1dCall {
  cpu::Conv1dParams p;
  int64_t pad_right = 0;
  bool batched = true;
  Shape out_shape;
  DType dtype = DType::kFloat32;
};

Conv1dCall plan(const Tensor& x, const Tensor& w, const Value& bias, const Value& stride,
                const Value& padding, const Value& dilation, const Value& groups) {
  Conv1dCall c;
  IP_CHECK(x.dim() == 2 || x.dim() == 3, kShapeMismatch,
           "[conv1d] Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of "
           "size: ",
           shape_str(x.shape()));
  IP_CHECK(w.dim() == 3, kShapeMismatch,
           "[conv1d] weight must be [out_channels, "
           "in_channels/groups, kernel], got ",
           shape_str(w.shape()));
  c.batched = x.dim() == 3;
  const int64_t n = c.batched ? x.size(0) : 1, c_in = x.size(-2), len = x.size(-1);
  c.p.stride = one_int(stride, "stride");
  c.p.dilation = one_int(dilation, "dilation");
  c.p.groups = groups.as_int(kOp);
  IP_CHECK(c.p.stride > 0 && c.p.dilation > 0 && c.p.groups > 0, kInvalidArgument,
           "[conv1d] stride, dilation and groups must be positive");
  const int64_t c_out = w.size(0), taps = w.size(2);
  IP_CHECK(c_out % c.p.groups == 0, kShapeMismatch, "[conv1d] out_channels ", c_out,
           " is not divisible by groups ", c.p.groups);
  IP_CHECK(w.size(1) * c.p.groups == c_in, kShapeMismatch, "[conv1d] Given groups=", c.p.groups,
           ", weight of size ", shape_str(w.shape()), ", expected input", shape_str(x.shape()),
           " to have ", w.size(1) * c.p.groups, " channels, but got ", c_in, " channels instead");
  const int64_t span = c.p.dilation * (taps - 1);
  if (padding.kind == Value::Kind::kString) {
    const std::string& mode = padding.s;
    if (mode == "valid") {
      c.p.padding = 0;
    } else if (mode == "same") {
      IP_CHECK(c.p.stride == 1, kInvalidArgument,
               "[conv1d] padding='same' is not supported for strided convolutions");
      c.p.padding = span / 2;
      c.pad_right = span - span / 2;
    } else {
      IP_FAIL(kInvalidArgument, "[conv1d] Invalid padding string: '", mode, "'");
    }
  } else {
    c.p.padding = one_int(padding, "padding");
    IP_CHECK(c.p.padding >= 0, kInvalidArgument, "[conv1d] negative padding is not supported");
    c.pad_right = c.p.padding;
  }
  const int64_t padded = len + c.p.padding + c.pad_right;
  IP_CHECK(padded >= span + 1, kShapeMismatch,
           "[conv1d] Calculated padded input size per "
           "channel: (",
           padded, "). Kernel size: (", span + 1,
           "). Kernel size can't be greater than actual input size");
  const int64_t l_out = (padded - span - 1) / c.p.stride + 1;
  if (!bias.is_none()) {
    const Tensor& b = bias.as_tensor(kOp);
    IP_CHECK(b.dim() == 1 && b.size(0) == c_out, kShapeMismatch, "[conv1d] bias of shape ",
             shape_str(b.shape()), " does not match out_channels ", c_out);
  }
  ResultType rt;
  rt.add_tensor(x.dtype(), x.dim());
  rt.add_tensor(w.dtype(), w.dim());
  c.dtype = rt.result();
  IP_CHECK(x.dtype() == w.dtype(), kDTypeMismatch, "[conv1d] Input type (", dtype_name(x.dtype()),
           ") and weight type (", dtype_name(w.dtype()), ") should be the same");
  c.out_shape = c.batched ? Shape{n, c_out, l_out} : Shape{c_out, l_out};
  return c;
}

void run(const Conv1dCall& c, const Tensor& out, const Tensor& x, const Tensor& w,
         const Value& bias) {
  Tensor b = bias.is_none() ? Tensor() : bias.as_tensor(kOp);
  if (c.batched) {
    cpu::conv1d(out, x, w, b, c.p);
  } else {
    cpu::conv1d(out.unsqueeze(0), x.unsqueeze(0), w, b, c.p);
  }
}

// Args: input, weight, bias, stride, padding, dilation, groups (at these indices).
void add_conv1d(Registry& r, const std::string& schema) {
  r.add_out(
      schema,
      [](const Args& a) {
        Conv1dCall c = plan(a[0].as_tensor(kOp), a[1].as_tensor(kOp), a[2], a[3], a[4], a[5], a[6]);
        return std::vector<Tensor>{Tensor::meta(c.out_shape, c.dtype)};
      },
      [](const Args& a, const std::vector<Tensor>& out) {
        const Tensor& x = a[0].as_tensor(kOp);
        const Tensor& w = a[1].as_tensor(kOp);
        run(plan(x, w, a[2], a[3], a[4], a[5], a[6]), out[0], x, w, a[2]);
      });
}

}  // namespace

void register_conv_ops(Registry& r) {
  add_conv1d(r,
             "conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, "
             "SymInt[1] padding=0, SymInt[1] dilation=1, SymInt groups=1) -> Tensor");
  add_conv1d(r,
             "conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, "
             "str padding=\"valid\", SymInt[1] dilation=1, SymInt groups=1) -> Tensor");
  // aten.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
  // groups): the 1-d, non-transposed case.
  auto conv_args = [](const Args& a) {
    IP_CHECK(!a[6].as_bool(kOp), kUnsupported,
             "[convolution] transposed convolution is not "
             "supported");
    IP_CHECK(a[0].as_tensor(kOp).dim() == 3, kUnsupported,
             "[convolution] only 1-d "
             "convolution ([N, C, L] input) is supported, got input of shape ",
             shape_str(a[0].as_tensor(kOp).shape()));
    return Args{a[0], a[1], a[2], a[3], a[4], a[5], a[8]};
  };
  r.add_out(
      "convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
      "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
      [conv_args](const Args& raw) {
        Args a = conv_args(raw);
        Conv1dCall c = plan(a[0].as_tensor(kOp), a[1].as_tensor(kOp), a[2], a[3], a[4], a[5], a[6]);
        return std::vector<Tensor>{Tensor::meta(c.out_shape, c.dtype)};
      },
      [conv_args](const Args& raw, const std::vector<Tensor>& out) {
        Args a = conv_args(raw);
        const Tensor& x = a[0].as_tensor(kOp);
        const Tensor& w = a[1].as_tensor(kOp);
        run(plan(x, w, a[2], a[3], a[4], a[5], a[6]), out[0], x, w, a[2]);
      });
}

}  // namespace inplace
