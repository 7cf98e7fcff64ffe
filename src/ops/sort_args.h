// Argument decoding of the sorts (topk, sort, argsort, msort), read by their declarations and
// by every backend's kernels.
#pragma once
#include <algorithm>

#include "core/tensor.h"
#include "core/value.h"
#include "ops/registry.h"  // Args

namespace inplace::sorting {

// The wrapped dim: a 0-d tensor sorts as a one-element lane, so dim may be 0 or -1.
inline int64_t sort_dim(const Tensor& x, const Value& dim, const char* op) {
  return wrap_dim(dim.as_int("dim"), std::max<int64_t>(x.dim(), 1), op);
}

// topk(self, k, dim, largest, sorted): the wrapped dim, k (checked against the dim's size) and
// the results' shape.
struct TopkArgs {
  int64_t dim, k;
  Shape shape;
};
TopkArgs topk_args(const Args& a);

}  // namespace inplace::sorting
