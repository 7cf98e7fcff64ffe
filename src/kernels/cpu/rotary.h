// Rotary position embedding in one pass: out = x * cos + rotate_half(x) * sin, where
// rotate_half(x) = cat(-x[..., d/2:], x[..., :d/2]) over the last dim (Hugging Face's form).
// Same float operations in the same order as that chain, with its rounding points: at bfloat16
// and float16 each product and the sum are rounded to the dtype, as the chain's mul, mul and add
// each round their result. So the result is bit-identical to the chain's kernels.
#pragma once
#include "core/tensor.h"

namespace inplace::cpu {

// x, cos, sin and out of one dtype (float32, bfloat16 or float16); x, cos and sin broadcast to
// out's shape (any strides); the last dim is even and is not broadcast.
void rotary_embedding(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor& out);

}  // namespace inplace::cpu
