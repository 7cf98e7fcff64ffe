// How the new value of what a mutating op writes is computed out of place.
#pragma once
#include <string>

#include "ir/node.h"
#include "ops/registry.h"

namespace inplace {

struct FunctionalForm {
  enum class Kind : uint8_t {
    kTwin,     // the out-of-place op (OpDef::functional, or the name without its '_')
    kCopy,     // copy_: expand_as + slice_scatter
    kSetitem,  // x[idx] = v: scatter through the index's views, or index_put
    kFill,     // fill_, zero_: full_like
  };
  Kind kind = Kind::kTwin;
  std::string twin_target;  // kTwin: what to call ("aten.add.Tensor")
  int mutated_arg = 0;      // the argument the op writes
};

// Throws naming the node when the op has no functional form: a custom op that writes an
// argument with no functional twin, an in-place op with no out-of-place form ("'foo_' is not
// supported"), an op that changes a tensor's view in place (transpose_), or one that writes
// several arguments.
FunctionalForm functional_form(const Node& node, const OpDef& op);

// Whether the op's name says it is an in-place method/overload (add_, __iadd__), as opposed to
// a custom op that happens to write an argument.
bool is_inplace_spelling(const OpDef& op);

}  // namespace inplace
