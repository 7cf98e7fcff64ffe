// Sorting along one dim: sort, argsort and topk share one kernel.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace inplace::cpu {

// Writes the first `k` elements of every lane along `dim` (a wrapped dim of a tensor with at
// least one dim) in sorted order: descending or ascending, NaN counting as larger than every
// number (torch's order). Equal values keep their original order (a stable sort), so the
// smaller index comes first. `values` (in's dtype) and `indices` (int64) have in's shape with
// k along dim; either may be undefined. Sorting all (k == size) is `sort`; k < size is `topk`,
// which only partially sorts.
void sort_lanes(const Tensor& in, int64_t dim, int64_t k, bool descending, const Tensor& values,
                const Tensor& indices);

}  // namespace inplace::cpu
