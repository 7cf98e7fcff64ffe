// Advanced (integer-tensor and mask) indexing as every op and backend reads it: the plan of
// one advanced index (which dims carry an index tensor, where the broadcast index dims land in
// the result: torch's placement rule), and the coordinates of a mask, which a mask index's shape
// rule reads (the result's shape depends on the mask's values) and nonzero returns.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace inplace {

// The plan of one advanced index over `self`: which dims carry an index tensor and where the
// broadcast index dims land in the result (torch's placement rule).
struct AdvancedIndex {
  std::vector<int64_t> dims;         // self dims that carry an index tensor, ascending
  std::vector<Tensor> indices;       // their int64/int32 index tensors, in `dims` order
  Shape index_shape;                 // the index tensors broadcast together
  bool front = false;                // indexed dims not adjacent: the index dims lead the result
  Shape result_shape;                // the gathered shape (index_put: what values broadcast to)
  std::vector<int64_t> report_dims;  // the dim a bounds error names, per entry of `dims`
  bool wrap_negative = true;         // -size <= i < 0 means i + size (aten.index); else refused
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

// An index plan for `index` (0-d or 1-d) along `dim`, as index_select / index_copy use. Their
// callers clear wrap_negative where PyTorch refuses a negative index (index_select,
// index_copy, index_add; index_fill takes one).
AdvancedIndex plan_dim_index(const Shape& self_shape, int64_t dim, const Tensor& index,
                             const char* op);

int64_t count_nonzero(const Tensor& t);
// [count, t.dim()] int64 coordinates of the non-zero elements in row-major order.
Tensor nonzero(const Tensor& t);

}  // namespace inplace
