// The dtype of a node's value where static metas stop: after a slice of runtime extent the shapes
// are per call, but dtypes are not. Followed back through ops whose result has their first
// tensor operand's dtype (views, linear, attention, silu, ...), binary arithmetic whose tensor
// operands agree, casts with a dtype argument, and cat of one dtype; unknown (nullopt) otherwise.
// Passes that fuse by dtype use it (fuse_weight_casts, fuse_rms_norm).
#pragma once
#include <map>
#include <optional>

#include "core/dtype.h"
#include "ir/graph.h"
#include "passes/meta_inference.h"

namespace inplace {

class DtypeOf {
 public:
  explicit DtypeOf(const MetaTable& metas) : metas_(metas) {}
  std::optional<DType> of(const Node* n);

 private:
  const MetaTable& metas_;
  std::map<const Node*, std::optional<DType>> memo_;
};

}  // namespace inplace
