// What the rewrites that reason about positions need to know of an integer value: that it is a
// runtime position read from an input plus a constant (`cache_position[0] + 1`, through the
// casts, copies, unsqueezes and `arange(1) + p` that torch.export records around it), or that
// it counts up along its last dim (`arange(s_max) + off`, the key index of a causal mask).
#pragma once
#include <cstdint>
#include <optional>

#include "ir/graph.h"
#include "passes/meta_inference.h"

namespace inplace {

// value(n) == value(core) + offset for a one-element int64 n; core is an int64 input with one
// element, or select/getitem of one at a constant index, so the engine reads it as a runtime
// scalar (docs/engine.md, "Runtime values and bounds").
struct PositionValue {
  Node* core = nullptr;
  int64_t offset = 0;
};
std::optional<PositionValue> trace_position(const MetaTable& metas, Node* n);
// Whether two cores read the same value: one node, or the same read of the same input (each
// layer of an exported model selects cache_position[0] anew).
bool same_core(const Node* a, const Node* b);

// n[..., j] == j + start for every j, every other dim of n of size 1 (arange, a view of it,
// plus a constant, or a constant tensor holding those values).
std::optional<int64_t> trace_key_index(const Graph& g, const MetaTable& metas, Node* n);

}  // namespace inplace
