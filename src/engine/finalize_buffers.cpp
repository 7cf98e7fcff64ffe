// Gives every value buffer its final home: an input binding (placed by reinplace), an output
// buffer (returned to the caller), or an arena slot shared by liveness. An elementwise step
// whose operand dies at that step writes its result over the operand.
#include <algorithm>
#include <numeric>

#include "engine/build_state.h"
#include "engine/memory_plan.h"

namespace inplace {

namespace {

int find_root(std::vector<int>& parent, int v) {
  while (parent[v] != v) v = parent[v] = parent[parent[v]];
  return v;
}

}  // namespace

void finalize_buffers(BuildState& st) {
  Plan& plan = st.plan;
  const int nv = static_cast<int>(st.values.size());
  std::vector<bool> is_output(nv, false);
  for (const TensorRef& r : plan.output_refs)
    if (r.buffer.kind == BufferKind::kArena && !st.values[r.buffer.index].placed)
      is_output[r.buffer.index] = true;

  // Last read of every value (steps and copies).
  std::vector<int> last_read(nv, -1);
  for (size_t q = 0; q < plan.steps.size(); ++q)
    for (const TensorSlot& s : plan.steps[q].tensors)
      if (s.ref.buffer.kind == BufferKind::kArena)
        last_read[s.ref.buffer.index] =
            std::max(last_read[s.ref.buffer.index], static_cast<int>(q));

  // A step a backend may run inside the step after it (kJoinsNext), when that step reads its
  // result: its operands live through that step.
  for (size_t q = 0; q + 1 < plan.steps.size(); ++q) {
    const Step& s = plan.steps[q];
    if (!s.op || !s.op->has_tag(kJoinsNext) || s.outs.size() != 1) continue;
    bool read_next = false;
    for (const TensorSlot& t : plan.steps[q + 1].tensors)
      read_next = read_next || t.ref.buffer == s.outs[0].buffer;
    if (!read_next) continue;
    for (const TensorSlot& t : s.tensors)
      if (t.ref.buffer.kind == BufferKind::kArena)
        last_read[t.ref.buffer.index] =
            std::max(last_read[t.ref.buffer.index], static_cast<int>(q + 1));
  }

  // In-place reuse: out := a dead operand's buffer (same bytes, same layout).
  std::vector<int> parent(nv);
  std::iota(parent.begin(), parent.end(), 0);
  for (size_t q = 0; q < plan.steps.size(); ++q) {
    Step& step = plan.steps[q];
    if (step.kind != StepKind::kOut || step.outs.size() != 1) continue;
    if (!(is_elementwise(step.op) || writes_over_self(step.op))) continue;
    const TensorRef& out = step.outs[0];
    if (out.buffer.kind != BufferKind::kArena) continue;
    int v = out.buffer.index;
    if (st.values[v].placed || is_output[v]) continue;
    for (size_t k = 0; k < step.tensors.size(); ++k) {
      const TensorSlot& s = step.tensors[k];
      if (s.ref.buffer.kind != BufferKind::kArena) continue;
      if (writes_over_self(step.op) && !is_elementwise(step.op) && s.path != std::vector<int>{0})
        continue;
      int a = s.ref.buffer.index;
      int ra = find_root(parent, a);
      if (st.values[a].placed || is_output[a] || last_read[a] != static_cast<int>(q) ||
          st.values[a].nbytes != st.values[v].nbytes || !same_layout(s.ref, out))
        continue;
      // Every read of `a` at this step must be in a position the kernel tolerates.
      bool ok = true;
      for (const TensorSlot& o : step.tensors)
        if (o.ref.buffer == s.ref.buffer && !same_layout(o.ref, out)) ok = false;
      if (!ok) continue;
      parent[v] = ra;
      break;
    }
  }

  // Output buffers and arena lifetimes per root.
  std::vector<int> output_index(nv, -1), arena_index(nv, -1);
  std::vector<BufferLifetime> lifetimes;
  for (int v = 0; v < nv; ++v) {
    if (st.values[v].placed) continue;
    if (is_output[v]) {
      output_index[v] = static_cast<int>(plan.output_buffer_bytes.size());
      plan.output_buffer_bytes.push_back(st.values[v].nbytes);
      continue;
    }
    int r = find_root(parent, v);
    if (arena_index[r] < 0) {
      arena_index[r] = static_cast<int>(lifetimes.size());
      lifetimes.push_back({st.values[r].nbytes, st.values[r].producer, st.values[r].producer});
    }
    BufferLifetime& lt = lifetimes[arena_index[r]];
    lt.first_step = std::min(lt.first_step, st.values[v].producer);
    lt.last_step = std::max({lt.last_step, last_read[v], st.values[v].producer});
  }
  MemoryPlan mp = plan_memory(lifetimes);
  plan.arena.clear();
  for (size_t i = 0; i < lifetimes.size(); ++i)
    plan.arena.push_back({mp.offsets[i], lifetimes[i].nbytes});
  plan.arena_bytes = mp.arena_bytes;

  auto final_id = [&](BufferId id) -> BufferId {
    if (id.kind != BufferKind::kArena) return id;
    int v = id.index;
    if (st.values[v].placed) return st.values[v].final;
    if (output_index[v] >= 0) return {BufferKind::kOutput, output_index[v]};
    return {BufferKind::kArena, arena_index[find_root(parent, v)]};
  };
  for (Step& s : plan.steps) {
    for (TensorSlot& t : s.tensors) t.ref.buffer = final_id(t.ref.buffer);
    for (TensorRef& o : s.outs) o.buffer = final_id(o.buffer);
  }
  for (TensorRef& r : plan.output_refs) r.buffer = final_id(r.buffer);
}

}  // namespace inplace
