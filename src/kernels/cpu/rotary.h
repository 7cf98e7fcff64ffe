// Rotary position embedding in one pass: out = x * cos + rotate_half(x) * sin, where
// rotate_half(x) = cat(-x[..., d/2:], x[..., :d/2]) over the last dim (Hugging Face's form).
// Same float operations in the same order as that chain, so the result is bit-identical.
#pragma once
#include "core/tensor.h"

namespace inplace::cpu {

// float32; x, cos and sin broadcast to out's shape (any strides); the last dim is even and is
// not broadcast.
void rotary_embedding(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor& out);

}  // namespace inplace::cpu
