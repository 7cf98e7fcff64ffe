// A graph captured at the example's extent of a dynamic dim (torch.export without dynamic
// shapes) holds that extent as literal sizes: x.view(B, T, H, D) is recorded as
// view(x, [1, 5, 2, 4]). Planned at the bound, such a view refuses the input, and at any other
// length it would be wrong. resymbolize_sizes() rewrites the size lists of view, reshape and
// expand whose input carries a dynamic dim so that they follow the input at every length: the
// entry that stands for the dim becomes -1 where the list has none, else
// sym_size(input, dim) (times the static sizes merged with it). Which entry that is comes from
// the dims the view keeps, splits or merges at the example's sizes; a list where that is unclear
// is refused, naming the node (left as written where every dynamic dim's example is its bound:
// the graph then plans and runs at the bound as captured). Literals that no tensor ties to the dim
// (arange(5), zeros(5)) are left as written.
#pragma once
#include <vector>

#include "core/tensor.h"
#include "engine/engine.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace inplace {

// `examples`: one per placeholder (their shapes are the extents the graph was captured at);
// `dims`: the dynamic dims by placeholder index. `options`: as the passes get them (metas of
// placeholders without one). Rewrites `graph` in place.
void resymbolize_sizes(Graph& graph, const std::vector<Tensor>& examples,
                       const std::vector<DynamicDim>& dims, const PassOptions& options);

}  // namespace inplace
