// Weight-only copies hoisted out of the engine's steps. After the passes, `clone(t(W))` (or of a
// permute) of a placeholder bound to state the program never writes (a parameter or read-only
// buffer of a torch.export signature) is the same on every call while W stays: it becomes a
// prepared binding (backend/plan.h, PreparedInput), made by the execution context when W is
// bound and when the caller says W was written, instead of a copy step on every call.
// prepare_in_out_weights writes these copies; one a model writes itself is hoisted alike.
#pragma once
#include <memory>
#include <vector>

#include "backend/plan.h"
#include "passes/pass.h"

namespace inplace {

// The graph the engine is built from: `graph` with each such copy replaced by a placeholder
// after the others (its example, a meta, appended to `examples`); `prepared` gets one entry per
// new placeholder. Null when there is nothing to hoist (build from `graph` itself).
std::unique_ptr<Graph> hoist_prepared_inputs(const Graph& graph, const PassContext& ctx,
                                             std::vector<Tensor>& examples,
                                             std::vector<PreparedInput>& prepared);

}  // namespace inplace
