// Pointwise kernels of the ops PyTorch models use for state updates and activations that are
// not plain unary/binary maps: addcmul, addcdiv, lerp, hardtanh, leaky_relu. Inputs broadcast
// to `out` and are converted to out's (floating) dtype; `out` may be the very view of `self`.
#pragma once
#include "core/scalar.h"
#include "core/tensor.h"

namespace inplace::cpu {

// out = self + value * t1 * t2 (torch's order: (value * t1) * t2).
void addcmul(const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
             Scalar value);
// out = self + value * (t1 / t2).
void addcdiv(const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
             Scalar value);
// out = self + weight * (end - self), in torch's two-sided form (exact at weight 0 and 1).
// `weight` is a tensor, or undefined with `weight_scalar` used.
void lerp(const Tensor& out, const Tensor& self, const Tensor& end, const Tensor& weight,
          Scalar weight_scalar);
// out = min(max(self, lo), hi).
void hardtanh(const Tensor& out, const Tensor& self, Scalar lo, Scalar hi);
// out = self > 0 ? self : self * slope.
void leaky_relu(const Tensor& out, const Tensor& self, Scalar slope);

}  // namespace inplace::cpu
