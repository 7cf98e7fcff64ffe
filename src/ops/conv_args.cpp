#include "ops/conv_args.h"

#include <string>

#include "core/error.h"

namespace inplace::conv {

namespace {

constexpr const char* kOp = "conv1d";

int64_t one_int(const Value& v, const char* what) {
  std::vector<int64_t> xs = v.as_int_list(kOp);
  IP_CHECK(xs.size() == 1, kInvalidArgument, "[conv1d] ", what, " must be one int, got ", xs.size(),
           " values");
  return xs[0];
}

}  // namespace

Conv1dCall conv1d_plan(const Tensor& x, const Tensor& w, const Value& bias, const Value& stride,
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

Args convolution_as_conv1d(const Args& a) {
  IP_CHECK(!a[6].as_bool(kOp), kUnsupported,
           "[convolution] transposed convolution is not "
           "supported");
  IP_CHECK(a[0].as_tensor(kOp).dim() == 3, kUnsupported,
           "[convolution] only 1-d "
           "convolution ([N, C, L] input) is supported, got input of shape ",
           shape_str(a[0].as_tensor(kOp).shape()));
  return Args{a[0], a[1], a[2], a[3], a[4], a[5], a[8]};
}

}  // namespace inplace::conv
