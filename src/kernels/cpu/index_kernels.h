// Advanced (integer-tensor) indexing: aten's index / index_put_ and the ops built on them
// (index_select, index_copy, index_add, index_fill, embedding), plus the mask kernels
// (nonzero, masked_select, masked_scatter).
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace inplace::cpu {

// The plan of one advanced index over `self`: which dims carry an index tensor and where the
// broadcast index dims land in the result (torch's placement rule).
struct AdvancedIndex {
  std::vector<int64_t> dims;         // self dims that carry an index tensor, ascending
  std::vector<Tensor> indices;       // their int64/int32 index tensors, in `dims` order
  Shape index_shape;                 // the index tensors broadcast together
  bool front = false;                // indexed dims not adjacent: the index dims lead the result
  Shape result_shape;                // the gathered shape (index_put: what values broadcast to)
  std::vector<int64_t> report_dims;  // the dim a bounds error names, per entry of `dims`
};

// `indices` is aten's Tensor?[] over self's leading dims (undefined = the whole dim), masks
// already expanded. Shape work only: the index tensors may be metas. `dim_names` (optional)
// maps self dims to the dims bounds errors should name (getitem reports the user's dims).
AdvancedIndex plan_advanced_index(const Shape& self_shape, const std::vector<Tensor>& indices,
                                  const char* op, const std::vector<int64_t>* dim_names = nullptr);

// Replaces each bool/uint8 mask by its nonzero() columns, checking the mask's shape against
// the dims it covers. A meta mask throws kUnsupported: the result shape depends on its values.
std::vector<Tensor> expand_index_masks(const Shape& self_shape, const std::vector<Tensor>& indices,
                                       const char* op);

// out (result_shape, self's dtype) <- self[indices].
void index_gather(const Tensor& self, const AdvancedIndex& ai, const Tensor& out, const char* op);

// self[indices] = values (or += alpha * values with accumulate). values broadcast to
// result_shape and are cast to self's dtype; duplicate indices: the last write wins, or all are
// summed (in opmath, rounded once per add as torch's index_add does).
void index_put(const Tensor& self, const AdvancedIndex& ai, const Tensor& values, bool accumulate,
               const char* op, Scalar alpha = Scalar(int64_t{1}));

// An index plan for `index` (0-d or 1-d) along `dim`, as index_select / index_copy use.
AdvancedIndex plan_dim_index(const Shape& self_shape, int64_t dim, const Tensor& index,
                             const char* op);

int64_t count_nonzero(const Tensor& t);
// [count, t.dim()] int64 coordinates of the non-zero elements in row-major order.
Tensor nonzero(const Tensor& t);
// 1-d: the elements of self (broadcast with mask) where mask is true, in row-major order.
Tensor masked_select(const Tensor& self, const Tensor& mask, const char* op);
// Writes source's leading elements, in order, into the positions of self where mask (broadcast
// to self) is true.
void masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source, const char* op);

}  // namespace inplace::cpu
