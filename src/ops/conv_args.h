// Argument decoding of conv1d (conv1d, conv1d.padding, aten.convolution in its 1-d form), read
// by the declarations (shape/dtype rules) and by every backend's kernels: stride, padding
// (ints or 'valid' / 'same'), dilation and groups, checked against the operands' shapes.
#pragma once
#include "core/tensor.h"
#include "core/value.h"
#include "ops/registry.h"  // Args

namespace inplace::conv {

struct Conv1dParams {
  int64_t stride = 1, padding = 0, dilation = 1, groups = 1;
};

// Shapes and parameters of one call; left padding in params, right padding separately.
struct Conv1dCall {
  Conv1dParams p;
  int64_t pad_right = 0;
  bool batched = true;
  Shape out_shape;
  DType dtype = DType::kFloat32;
};

// input, weight, bias, stride, padding, dilation, groups.
Conv1dCall conv1d_plan(const Tensor& x, const Tensor& w, const Value& bias, const Value& stride,
                       const Value& padding, const Value& dilation, const Value& groups);

// aten.convolution's arguments (input, weight, bias, stride, padding, dilation, transposed,
// output_padding, groups) as conv1d's (at the indices above): only a 1-d, non-transposed one.
Args convolution_as_conv1d(const Args& a);

}  // namespace inplace::conv
