// A view as a chain of primitive steps (select, slice, transpose, ...) from a base tensor, and
// how to emit each step forward (the view of a new base) and backward (scatter a new value of
// the view into its base). Emitted ops are shape-agnostic where an op exists for it.
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"
#include "passes/op_info.h"

namespace inplace {

struct ViewStep {
  enum class Kind : uint8_t {
    kIdentity,   // alias, detach, contiguous of a contiguous tensor
    kSelect,     // dim, index
    kSlice,      // dim, start, end, step (None allowed)
    kUnsqueeze,  // dim
    kTranspose,  // dim0, dim1
    kT,          // t()
    kPermute,    // dims
    kMovedim,    // source, destination
    kDiagonal,   // offset, dim1, dim2
    kAsStrided,  // size, stride, storage_offset (relative to the root's storage)
    kReshape,    // shape: any order-preserving reshape (view, flatten, squeeze, unflatten)
    kExpand,     // sizes
    kNarrow,     // dim, start, length: a start known only at run time (a node)
  };
  Kind kind = Kind::kIdentity;
  std::vector<Value> params;

  static ViewStep identity() { return {}; }
  static ViewStep make(Kind k, std::vector<Value> p) { return {k, std::move(p)}; }
  std::string to_string() const;
};

const char* view_step_name(ViewStep::Kind k);

// Applies a step to a tensor (real or meta). Params must be known numbers; throws otherwise.
Tensor apply_step(const Tensor& t, const ViewStep& step);

// Emits the view `step` of `input`.
Node* emit_forward(Emitter& em, const ViewStep& step, Node* input);
// Emits the new value of `base` after its view `step` takes the value `view_value`.
// `base_meta` (may be null) is the base's shape, used where no shape-agnostic op exists.
// `where` names the node for errors.
Node* emit_inverse(Emitter& em, const ViewStep& step, Node* base, Node* view_value,
                   const Tensor* base_meta, const std::string& where);

}  // namespace inplace
