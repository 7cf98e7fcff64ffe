// Drops the steps whose results nothing reads: a tensor whose value only defines a runtime
// scalar (a decoder's `pos[-1] + 1`, the filled prefix's end, which the scalars compute from the
// input itself) would otherwise cost a kernel call on every call.
#include <algorithm>

#include "engine/build_state.h"

namespace inplace {

namespace {

// A step whose every result is a temporary and has no effect besides them.
bool droppable(const Step& s) {
  if (s.kind != StepKind::kOut || !s.writes_binding.empty() || s.outs.empty()) return false;
  for (const TensorRef& o : s.outs)
    if (o.buffer.kind != BufferKind::kArena) return false;
  return true;
}

}  // namespace

void drop_dead_steps(BuildState& st) {
  Plan& plan = st.plan;
  std::vector<bool> keep(plan.steps.size(), true);
  bool changed = true;
  while (changed) {  // dropping a step may leave its operands' producers unread
    changed = false;
    std::vector<int> readers(plan.arena.size(), 0);
    auto read = [&](const TensorRef& r) {
      if (r.buffer.kind == BufferKind::kArena) ++readers[r.buffer.index];
    };
    for (const TensorRef& r : plan.output_refs) read(r);
    for (size_t q = 0; q < plan.steps.size(); ++q) {
      if (!keep[q]) continue;
      for (const TensorSlot& t : plan.steps[q].tensors) read(t.ref);
    }
    // An arena slot is shared by values whose lives do not overlap: a step is dead only when
    // no step reads its slot at all (a read of another value there keeps it, conservatively).
    for (size_t q = plan.steps.size(); q-- > 0;) {
      const Step& s = plan.steps[q];
      if (!keep[q] || !droppable(s)) continue;
      bool is_read = false;
      for (const TensorRef& o : s.outs) is_read |= readers[o.buffer.index] > 0;
      if (is_read) continue;
      keep[q] = false;
      changed = true;
    }
  }
  if (std::all_of(keep.begin(), keep.end(), [](bool k) { return k; })) return;
  std::vector<int> new_index(plan.steps.size(), -1);
  std::vector<Step> steps;
  for (size_t q = 0; q < plan.steps.size(); ++q) {
    if (!keep[q]) continue;
    new_index[q] = static_cast<int>(steps.size());
    steps.push_back(std::move(plan.steps[q]));
  }
  plan.steps = std::move(steps);
  std::vector<RefreshItem> refresh;
  for (RefreshItem r : plan.refresh) {
    if (r.kind == RefreshItem::Kind::kStep) {
      if (new_index[r.index] < 0) continue;
      r.index = new_index[r.index];
    }
    refresh.push_back(r);
  }
  plan.refresh = std::move(refresh);
}

}  // namespace inplace
