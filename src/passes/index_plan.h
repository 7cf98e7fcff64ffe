// Python indexing (x[idx], x[idx] = v) split into a basic part, which is a chain of views
// (select, slice, unsqueeze), and an advanced part (tensor indices) that index/index_put apply
// to the result of the basic part. This is how torch applies an index: ints and slices first
// as views, then the tensors at the dims they fall on, so state[(blocks, 0, offsets, :)]
// keeps every index on its own dimension.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "passes/view_steps.h"

namespace inplace {

struct IndexElem {
  enum class Kind : uint8_t { kInt, kTensor, kBoolTensor };
  Kind kind = Kind::kTensor;
  int64_t dims = 1;  // dims a tensor index consumes (a bool mask: its rank)
};
// Says what a node-valued index element is (an int, or a tensor index and its rank).
using ClassifyIndex = std::function<IndexElem(const Value&)>;

struct IndexPlan {
  std::vector<ViewStep> steps;  // the basic part, applied in order
  // index_put/index indices after the basic part (None: whole dim); empty: no tensor index.
  std::vector<Value> advanced;
  std::string unsupported;  // non-empty: this index can't be planned, and why
  bool has_advanced() const { return !advanced.empty(); }
};

// `self_ndim` is needed only when a tensor index follows an Ellipsis.
IndexPlan plan_index(const Value& index, const ClassifyIndex& classify,
                     std::optional<int64_t> self_ndim);

}  // namespace inplace
