// Advanced (integer-tensor) indexing: aten's index / index_put_ and the ops built on them
// (index_select, index_copy, index_add, index_fill, embedding), plus the mask kernels
// (nonzero, masked_select, masked_scatter).
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "ops/advanced_index.h"

namespace inplace::cpu {

// out (result_shape, self's dtype) <- self[indices].
void index_gather(const Tensor& self, const AdvancedIndex& ai, const Tensor& out, const char* op);

// self[indices] = values (or += alpha * values with accumulate). values broadcast to
// result_shape and are cast to self's dtype; duplicate indices: the last write wins, or all are
// summed (in opmath, rounded once per add as torch's index_add does).
void index_put(const Tensor& self, const AdvancedIndex& ai, const Tensor& values, bool accumulate,
               const char* op, Scalar alpha = Scalar(int64_t{1}));

// 1-d: the elements of self (broadcast with mask) where mask is true, in row-major order.
Tensor masked_select(const Tensor& self, const Tensor& mask, const char* op);
// Writes source's leading elements, in order, into the positions of self where mask (broadcast
// to self) is true.
void masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source, const char* op);

}  // namespace inplace::cpu
