// 1-d convolution (torch.nn.functional.conv1d): out[n, co, l] = bias[co] + sum over the
// group's input channels ci and taps k of x[n, ci, l*stride + k*dilation - padding] * w[co, ci, k].
#pragma once
#include "core/tensor.h"
#include "ops/conv_args.h"

namespace inplace::cpu {

using conv::Conv1dParams;  // decoded by ops/conv_args.h

// x [N, C_in, L], w [C_out, C_in/groups, K], bias [C_out] or undefined, out [N, C_out, L_out];
// all of out's dtype (float32 or float64). Inputs may be strided; out is written densely
// through its strides.
void conv1d(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias,
            const Conv1dParams& p);

}  // namespace inplace::cpu
