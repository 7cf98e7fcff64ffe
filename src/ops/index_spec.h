// Python tensor indexing (x[i], x[i] = v) parsed with torch's rules into per-dimension entries,
// so that getitem/setitem and the passes that decompose them agree on one reading.
//
// torch applies an index in two steps, and so does this file:
//  1. the basic part, left to right, as views of self: an int selects (removing the dim), a slice
//     slices, None (and a Python bool) unsqueezes, Ellipsis skips the dims nobody names;
//  2. if any tensor (or list, or bool) index is present, aten.index / aten.index_put_ on that view
//     with the list of index tensors (None for the dims in between).
// So ints never take part in advanced indexing: x[:, idx, :, 0] on [A,B,C,D] gives [A, n, C]
// (torch; NumPy would give [n, A, C]), and state[blocks, 0, offsets, :] on [B,H,S,D] gives [n, D]
// because the select removes H and leaves blocks and offsets adjacent.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "core/tensor.h"
#include "core/value.h"
#include "ops/advanced_index.h"

namespace inplace {

struct IndexEntry {
  enum class Kind : uint8_t { kInt, kSlice, kNone, kEllipsis, kBool, kTensor };
  Kind kind = Kind::kNone;
  // The first dim of self this entry consumes; -1 for None and bool (they add a dim).
  int64_t self_dim = -1;
  // The dim of the partly indexed view this entry applies to when its turn comes (torch's
  // running dim): emit select(view, view_dim, index), slice(view, view_dim, ...),
  // unsqueeze(view, view_dim) in entry order to rebuild the basic view.
  int64_t view_dim = 0;
  // Dims of self consumed: 1 for int, slice and integer tensors, mask.dim() for a mask, the
  // dims it stands for for Ellipsis, 0 for None and bool.
  int64_t span = 0;
  int64_t index = 0;                   // kInt, as written (may be negative)
  std::optional<int64_t> start, stop;  // kSlice (None = open)
  int64_t step = 1;                    // kSlice, > 0
  bool flag = false;                   // kBool
  // kTensor: an int64/int32 index or a bool/uint8 mask (dim >= 1). kInt from a 0-dim integer
  // tensor keeps that tensor here too.
  Tensor tensor;
  // The value only exists at run time: a graph node reference (an int or a bound of a slice)
  // or a meta tensor; index/start/stop/flag are then placeholders.
  bool dynamic = false;
  // The entry as written, node references included: passes emitting select/slice nodes reuse it.
  Value raw;
};

struct IndexSpec {
  std::vector<IndexEntry> entries;
  // Any tensor, list or bool index: getitem copies, setitem goes through index_put_.
  bool has_advanced() const;
};

// The elements of an index as torch reads them (treatSequenceAsTuple): a tuple's items, a list's
// items when it holds a tensor, slice, None, Ellipsis or sequence (and is shorter than 32),
// else the index itself as one element.
std::vector<Value> index_elements(const Value& index);
// A list (nested lists too) of numbers used as an index, as torch converts it: a bool tensor
// when every leaf is a bool, else int64. Throws naming `op` for ragged lists or other leaves.
Tensor index_tensor_from_list(const Value& list, const char* op);

// Python's slice.indices(n) for a sequence of n items, negative steps included: the first
// index, the end (exclusive) and the step; `step` must not be 0.
struct SliceIndices {
  int64_t start = 0, stop = 0, step = 1;
};
SliceIndices python_slice_indices(std::optional<int64_t> start, std::optional<int64_t> stop,
                                  int64_t step, int64_t n);

// Parses `index` (int, slice, None, Ellipsis, bool, tensor, list, tuple of those) for a tensor
// of `self_dim` dims. Lists follow torch: a list holding a tensor, slice, None, Ellipsis or
// sequence (and shorter than 32) reads as a tuple; else it becomes an int64 (or bool) tensor.
// Graph node references are accepted too (for passes): a node whose meta has a dtype stands for
// a meta tensor of its meta shape, any other node for an int known at run time (dynamic).
IndexSpec parse_index(const Value& index, int64_t self_dim, const char* op);

// Step 1 above: the basic view of self and aten's index list for step 2.
struct BasicIndexed {
  Tensor view;
  // aten's Tensor?[] over view's dims (undefined = None; masks not yet expanded). Empty when
  // the index is basic.
  std::vector<Tensor> indices;
  // For every dim of `view`: the dim of self it comes from, or -1 for an added dim.
  std::vector<int64_t> self_dims;
};
BasicIndexed apply_basic_index(const Tensor& self, const IndexSpec& spec, const char* op);

// Steps 1 and 2 planned for a tensor self: the basic view, and the advanced index over it (masks
// expanded; none when basic.indices is empty).
struct PlannedIndex {
  BasicIndexed basic;
  AdvancedIndex ai;
};
PlannedIndex plan_tensor_index(const Tensor& self, const Value& index, const char* op);

// self[index] where no data is gathered: a view for a basic index, a meta for an advanced index
// of a meta self (shape work). The cpu kernel (kernels/cpu/getitem.cpp) gathers the rest.
Tensor getitem_tensor(const Tensor& self, const Value& index);
// self[index] = value: the value to write, its leading size-1 dims dropped (as torch); for a
// basic index, checked to broadcast to the indexed view. The cpu kernel writes it, cast to
// self's dtype.
Tensor setitem_value(const Tensor& self, const PlannedIndex& p, const Tensor& value);

}  // namespace inplace
