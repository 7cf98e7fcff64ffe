// Which ops return views of an argument, and the view steps each one takes. The registry says
// an op is a view (OpKind::kView); these rules add how to scatter a write back through it, and
// decide the ops torch makes views only sometimes (reshape, contiguous, to).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "passes/index_plan.h"
#include "passes/meta_inference.h"
#include "passes/view_steps.h"

namespace inplace {

struct ViewRule {
  enum class Kind : uint8_t {
    kNotView,    // a fresh tensor (or not a tensor)
    kView,       // a view of args[parent_arg]: `steps` from it
    kCopy,       // an op that is sometimes a view, a copy this time
    kContainer,  // a list of views of args[parent_arg] (split, chunk, unbind)
  };
  Kind kind = Kind::kNotView;
  int parent_arg = 0;
  std::vector<ViewStep> steps;
  bool absolute = false;   // as_strided: the steps start at the root's storage, not the parent
  std::string no_inverse;  // non-empty: a write through this view can't be scattered back
  std::optional<Tensor> result_meta;  // when known without running the op

  // kContainer: piece k of the parent.
  enum class Split : uint8_t { kUnknown, kSplit, kSplitWithSizes, kUnbind } split = Split::kUnknown;
  Value dim;
  int64_t split_size = 0;
  std::vector<int64_t> sizes;
};

// `args` are the node's arguments bound to `op`'s schema (node references kept); `metas`
// gives the shapes of the nodes they reference, when known.
ViewRule view_rule(const Node& node, const OpDef& op, const Args& args, const MetaTable& metas);

// Steps from a container's parent to its piece `k`; false (with the reason) when unknown.
bool piece_steps(const ViewRule& container, int64_t k, std::vector<ViewStep>* steps,
                 std::string* why);

// Classifies a node-valued index element by its meta (an int, or a tensor index and its rank).
IndexElem classify_index_element(const Value& v, const MetaTable& metas);

}  // namespace inplace
