// CPU kernels for tensor factories: arange and triangular masks. Each writes a pre-allocated
// contiguous result (the engine's allocation-free path); shapes were checked by the op.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace inplace::cpu {

// out[i] = start + i * step. Integral results step in int64 (exact past 2^53), float results
// in double and then round once, as torch does.
void arange(const Tensor& out, Scalar start, Scalar step);

// out = self with the elements above (tril) or below (triu) diagonal `diagonal` of the last two
// dims zeroed. `self` may be strided and of a different dtype than `out`.
void tril_triu(const Tensor& self, int64_t diagonal, bool upper, const Tensor& out);

}  // namespace inplace::cpu
