// The functional inverses of view ops as every backend reads them: slice_scatter(self, src, dim,
// start, end, step), select_scatter(self, src, dim, index), diagonal_scatter(self, src, offset,
// dim1, dim2), as_strided_scatter(self, src, size, stride, storage_offset). Each returns a copy of
// self with the view's region replaced by src, which must have exactly the region's shape.
#pragma once
#include "ops/registry.h"

namespace inplace::indexing {

enum class ViewScatter { kSlice, kSelect, kDiagonal, kAsStrided };

const char* view_scatter_name(ViewScatter kind);
// The region of `t` (self, a meta of it, or the result) that the arguments name; throws naming
// the op when they name none.
Tensor view_scatter_region(ViewScatter kind, const Tensor& t, const Args& a);
// The same, checked: throws naming the op and the arguments unless src has the region's shape.
Tensor checked_view_scatter_region(ViewScatter kind, const Tensor& t, const Tensor& self,
                                   const Tensor& src, const Args& a);

}  // namespace inplace::indexing
