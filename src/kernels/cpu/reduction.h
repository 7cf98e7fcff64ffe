// Reduction kernels: sum, mean, var, max/min (+ index), softmax. Each takes the input (any
// strides, any dims), a mask of the dims it folds away, and pre-allocated results that hold the
// kept dims in order (with or without size-1 placeholders for the folded ones).
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace inplace::cpu {

using DimMask = std::vector<bool>;  // DimMask[d]: input dim d is reduced

// out dtype: in's, or int64 for integral/bool in. Floats accumulate in double.
void sum(const Tensor& in, const DimMask& reduced, const Tensor& out);
// Floating in, out of the same dtype; an empty reduction gives NaN.
void mean(const Tensor& in, const DimMask& reduced, const Tensor& out);
// Sum of squared deviations / max(0, n - correction), two passes in double; its square root
// when `take_sqrt` (std).
void var(const Tensor& in, const DimMask& reduced, double correction, const Tensor& out,
         bool take_sqrt = false);
// Largest (is_max) or smallest value, NaN winning like torch, and the row-major position of its
// first occurrence within the reduced dims. `values` (in's dtype) or `indices` (int64) may be
// undefined. The reduced dims must not be empty.
void extreme(const Tensor& in, const DimMask& reduced, bool is_max, const Tensor& values,
             const Tensor& indices);
// softmax / log_softmax along `dim`; out has in's shape. Floating dtypes; in and out may differ
// in dtype (half_to_float).
void softmax(const Tensor& in, int64_t dim, bool log, const Tensor& out);

}  // namespace inplace::cpu
