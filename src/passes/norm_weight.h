// Gemma's RMSNorm weight `1 + w.to(float32)` as torch.export records it: the passes that fold it
// into the op that applies it (a product's norm prologue, a norm's weight_offset) find the model's
// own weight w behind it here.
#pragma once
#include <vector>

#include "ir/graph.h"
#include "passes/meta_inference.h"

namespace inplace {

// w when `add` (a norm's float32 weight, read by nothing else) is add(to(w, float32), 1.0), the
// cast gone where w is float32 (drop_identity_casts); w an engine input or constant of [k] and
// of `x_dtype` or float32 (float32 only when there is no cast), the cast read only by the add.
// The add and the cast are appended to `dead`. Null otherwise.
Node* one_plus_weight_source(const Graph& g, const MetaTable& metas, Node* add, int64_t k,
                             DType x_dtype, std::vector<Node*>* dead);

// Whether an upcast_rms_norm node's arguments after weight_in_float are the defaults (no
// weight_offset, no residual): the plain norm the prologue and head fusions take as theirs.
bool upcast_norm_has_default_tail(const Node* norm);

}  // namespace inplace
