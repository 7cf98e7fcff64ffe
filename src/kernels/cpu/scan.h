// Scans along one dim: cumsum and cumprod.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace inplace::cpu {

// out[..., i, ...] = in[..., 0, ...] + ... + in[..., i, ...] along `dim` (a wrapped dim of a
// tensor with at least one dim). out has in's shape and either in's dtype or, for integral/bool
// in, int64 (the elements widen as they are read). Accumulates like torch's CPU kernel: float
// and double in double, half types in float, integers in 64 bits with wrap-around.
void cumsum(const Tensor& in, int64_t dim, const Tensor& out);
// The same with products.
void cumprod(const Tensor& in, int64_t dim, const Tensor& out);

}  // namespace inplace::cpu
