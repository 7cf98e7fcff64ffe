// State shared by the engine builder's phases (trace -> reinplace -> buffer finalisation).
// Values produced by steps are numbered; until finalisation, refs to them use
// BufferId{kArena, value id}.
#pragma once
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "ir/graph.h"

namespace inplace {

struct ValueBuffer {
  int64_t nbytes = 0;
  int producer = -1;    // step index
  bool placed = false;  // written straight into an input binding
  BufferId final{BufferKind::kArena, -1};
};

struct BuildState {
  Plan plan;
  std::vector<ValueBuffer> values;
  std::vector<Mutation> mutations;  // the outputs that are new values of inputs
  EngineOptions options;
  // Copy steps to insert after step `first` (-1: before all steps).
  std::vector<std::pair<int, Step>> copies;
  // Reinplacing: the (step, operand) reads of every buffer, indexed once (steps don't change
  // until the copies are inserted), so conflict analysis stays linear in the graph.
  std::unordered_map<int64_t, std::vector<std::pair<int, int>>> step_reads;
};

// Ops whose result may share memory with argument 0 (scatter-like: result = self + writes;
// their kernels copy self into the result first, a no-op when the two are the same view).
bool writes_over_self(const OpDef* op);
// Ops whose result may share memory with any operand of identical layout.
bool is_elementwise(const OpDef* op);
bool same_layout(const TensorRef& a, const TensorRef& b);
// The ref covers its whole buffer of `nbytes` contiguously from offset 0.
bool is_full(const TensorRef& r, int64_t nbytes);

// Walks the functional graph over metadata and appends its steps, runtime scalars and refresh.
void build_steps(BuildState& st, const Graph& graph, const std::vector<Tensor>& examples);
// Decides which mutated values are computed directly in their input's memory and schedules a
// copy for the others; fills plan.aliased_io (alias mode) or the copy-back steps.
void reinplace(BuildState& st);
// Output buffers, in-place reuse of dead operands, arena offsets, final refs.
void finalize_buffers(BuildState& st);
// Drops the steps whose temporaries nothing reads (dead_steps.cpp).
void drop_dead_steps(BuildState& st);

}  // namespace inplace
