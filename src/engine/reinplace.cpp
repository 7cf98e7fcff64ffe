// Reinplacing with conflict analysis (after MLIR one-shot bufferization and PyTorch's reinplace
// pass): a mutated input's new value is computed straight into the input's memory when nothing
// reads the value it overwrites afterwards; otherwise it is computed into a temporary and
// copied in once the old value is dead. A mutation is never dropped.
#include <algorithm>
#include <unordered_set>

#include "engine/build_state.h"

namespace inplace {

bool writes_over_self(const OpDef* op) {
  return op && op->has_tag(kScatterLike);
}

bool is_elementwise(const OpDef* op) {
  return op && op->has_tag(kPointwise);
}

bool same_layout(const TensorRef& a, const TensorRef& b) {
  // A dynamic ref's layout is known only per call: never the same as anything at compile time.
  if (a.dyn >= 0 || b.dyn >= 0) return false;
  return a.offset == b.offset && a.shape == b.shape && a.strides == b.strides && a.dtype == b.dtype;
}

bool is_full(const TensorRef& r, int64_t nbytes) {
  if (r.dyn >= 0) return false;
  return r.offset == 0 && r.strides == contiguous_strides(r.shape) &&
         numel_of(r.shape) * static_cast<int64_t>(dtype_size(r.dtype)) == nbytes;
}

namespace {

TensorRef full_input_ref(const Plan& plan, int input) {
  const Binding& b = plan.inputs[input];
  return TensorRef{{BufferKind::kInput, input}, 0, b.shape, contiguous_strides(b.shape), b.dtype};
}

int64_t input_bytes(const Plan& plan, int input) {
  const Binding& b = plan.inputs[input];
  return numel_of(b.shape) * static_cast<int64_t>(dtype_size(b.dtype));
}

// Reads of `buffer` as positions: step q reads at 2q, a copy scheduled after step q at 2q+1.
struct Read {
  int pos;
  int step;  // -1 for copies
  int slot;
};

int64_t buffer_key(BufferId b) {
  return (static_cast<int64_t>(b.kind) << 32) | static_cast<uint32_t>(b.index);
}

std::vector<Read> reads_of(const BuildState& st, BufferId buffer) {
  std::vector<Read> out;
  auto it = st.step_reads.find(buffer_key(buffer));
  if (it != st.step_reads.end())
    for (auto [q, k] : it->second) out.push_back({2 * q, q, k});
  for (const auto& [after, copy] : st.copies)
    if (copy.tensors[0].ref.buffer == buffer) out.push_back({2 * after + 1, -1, 0});
  return out;
}

bool output_reads(const BuildState& st, BufferId buffer, int except_output) {
  for (size_t j = 0; j < st.plan.output_refs.size(); ++j)
    if (static_cast<int>(j) != except_output && st.plan.output_refs[j].buffer == buffer)
      return true;
  return false;
}

// May step p write its result over `old` (held in the same memory)? Every read of `old` must
// come before p, or be p's own read of it in a position the kernel tolerates.
bool can_overwrite(const BuildState& st, BufferId old, int p, const TensorRef& out,
                   int except_output) {
  if (output_reads(st, old, except_output)) return false;
  const Step& step = st.plan.steps[p];
  for (const Read& r : reads_of(st, old)) {
    if (r.pos < 2 * p) continue;
    if (r.pos > 2 * p) return false;
    const TensorSlot& slot = step.tensors[r.slot];
    bool as_self = slot.path == std::vector<int>{0} && writes_over_self(step.op);
    bool elementwise = is_elementwise(step.op);
    if (!((as_self || elementwise) && same_layout(slot.ref, out))) return false;
  }
  return true;
}

// The chain of values ending in `last`, each computed from its predecessor as `self`
// (c1 = slice_scatter(cache, ..); c2 = slice_scatter(c1, ..)), earliest first.
std::vector<int> self_chain(const BuildState& st, int last) {
  std::vector<int> chain{last};  // latest first until the end (a chain may be 20,000 long)
  std::unordered_set<int> seen{last};
  while (true) {
    const ValueBuffer& v = st.values[chain.back()];
    const Step& step = st.plan.steps[v.producer];
    if (!(writes_over_self(step.op) || is_elementwise(step.op)) || step.tensors.empty()) break;
    const TensorSlot& self = step.tensors[0];
    if (self.path != std::vector<int>{0} || self.ref.buffer.kind != BufferKind::kArena) break;
    int prev = self.ref.buffer.index;
    const ValueBuffer& pv = st.values[prev];
    if (pv.placed || !is_full(self.ref, pv.nbytes) || pv.nbytes != v.nbytes) break;
    if (!seen.insert(prev).second) break;
    chain.push_back(prev);
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

bool try_place(BuildState& st, const Mutation& a) {
  const TensorRef& ref = st.plan.output_refs[a.output];
  if (ref.buffer.kind != BufferKind::kArena) return false;
  int last = ref.buffer.index;
  if (st.values[last].placed) return false;
  const int64_t nbytes = input_bytes(st.plan, a.input);
  TensorRef in_ref = full_input_ref(st.plan, a.input);
  if (!is_full(ref, nbytes) ||
      !same_layout(ref, TensorRef{ref.buffer, 0, in_ref.shape, in_ref.strides, in_ref.dtype}))
    return false;
  std::vector<int> chain = self_chain(st, last);
  // Try the whole chain, then shorter suffixes (earlier members stay in temporaries).
  for (size_t first = 0; first < chain.size(); ++first) {
    bool ok = true;
    for (size_t m = first; m < chain.size() && ok; ++m) {
      const ValueBuffer& v = st.values[chain[m]];
      const Step& step = st.plan.steps[v.producer];
      if (step.kind != StepKind::kOut || step.outs.size() != 1) ok = false;
      if (!ok) break;
      TensorRef out = step.outs[0];
      BufferId old = m == first ? BufferId{BufferKind::kInput, a.input}
                                : BufferId{BufferKind::kArena, chain[m - 1]};
      // Compare layouts as if both lived in the same memory.
      out.buffer = old;
      ok = is_full(step.outs[0], nbytes) &&
           can_overwrite(st, old, v.producer, out, m + 1 == chain.size() ? a.output : -1);
    }
    if (!ok) continue;
    for (size_t m = first; m < chain.size(); ++m) {
      ValueBuffer& v = st.values[chain[m]];
      v.placed = true;
      v.final = {BufferKind::kInput, a.input};
      st.plan.steps[v.producer].writes_binding = st.plan.inputs[a.input].name;
    }
    return true;
  }
  return false;
}

Step copy_step(const TensorRef& src, const TensorRef& dst, const std::string& binding) {
  Step s;
  s.kind = StepKind::kCopy;
  s.node = "copy_back." + binding;
  s.args = {Value::from_tensor(Tensor::meta(src.shape, src.dtype, src.strides))};
  s.tensors.push_back({{0}, src});
  s.outs.push_back(dst);
  s.writes_binding = binding;
  return s;
}

// The last position that reads the input's current value (steps and scheduled copies).
int last_read_step(const BuildState& st, int input) {
  int last = -1;
  for (const Read& r : reads_of(st, {BufferKind::kInput, input}))
    last = std::max(last, r.step >= 0 ? r.step : r.pos / 2);
  return last;
}

int producer_of(const BuildState& st, const TensorRef& ref) {
  return ref.buffer.kind == BufferKind::kArena ? st.values[ref.buffer.index].producer : -1;
}

}  // namespace

void reinplace(BuildState& st) {
  Plan& plan = st.plan;
  st.step_reads.clear();
  for (size_t q = 0; q < plan.steps.size(); ++q)
    for (size_t k = 0; k < plan.steps[q].tensors.size(); ++k)
      st.step_reads[buffer_key(plan.steps[q].tensors[k].ref.buffer)].push_back(
          {static_cast<int>(q), static_cast<int>(k)});
  const int last_step = static_cast<int>(plan.steps.size()) - 1;
  for (const Mutation& a : st.mutations) {
    const std::string& name = plan.inputs[a.input].name;
    TensorRef in_ref = full_input_ref(plan, a.input);
    TensorRef src = plan.output_refs[a.output];
    bool identity = src.buffer == in_ref.buffer && same_layout(src, in_ref);
    if (!st.options.alias) {
      // Copy-back engine: the new value lives in fresh memory, copied back after the call.
      if (!identity) st.copies.emplace_back(last_step, copy_step(src, in_ref, name));
      plan.output_refs[a.output] = in_ref;
      continue;
    }
    if (!identity && !try_place(st, a)) {
      int after = std::max(producer_of(st, src), last_read_step(st, a.input));
      st.copies.emplace_back(after, copy_step(src, in_ref, name));
      plan.output_refs[a.output] = in_ref;
    }
    MutationKind kind = MutationKind::kUser;
    int p = producer_of(st, plan.output_refs[a.output]);
    if (p >= 0 && st.values[plan.output_refs[a.output].buffer.index].placed && plan.steps[p].op &&
        plan.steps[p].op->has_tag(kCacheUpdate))
      kind = MutationKind::kKvCacheUpdate;
    plan.aliased_io.push_back({a.output, a.input, kind});
  }
  for (const Mutation& a : st.mutations) plan.mutated_inputs.push_back(a.input);
  std::sort(plan.mutated_inputs.begin(), plan.mutated_inputs.end());
  plan.mutated_inputs.erase(std::unique(plan.mutated_inputs.begin(), plan.mutated_inputs.end()),
                            plan.mutated_inputs.end());
  // Insert the scheduled copies and renumber producers.
  if (st.copies.empty()) return;
  std::stable_sort(st.copies.begin(), st.copies.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<Step> steps;
  std::vector<int> new_index(plan.steps.size()), dynamic_copies;
  size_t c = 0;
  for (int q = -1; q < static_cast<int>(plan.steps.size()); ++q) {
    if (q >= 0) {
      new_index[q] = static_cast<int>(steps.size());
      steps.push_back(std::move(plan.steps[q]));
    }
    while (c < st.copies.size() && st.copies[c].first == q) {
      if (st.copies[c].second.tensors[0].ref.dyn >= 0)
        dynamic_copies.push_back(static_cast<int>(steps.size()));
      steps.push_back(std::move(st.copies[c++].second));
    }
  }
  plan.steps = std::move(steps);
  for (ValueBuffer& v : st.values) v.producer = new_index[v.producer];
  for (RefreshItem& r : plan.refresh)
    if (r.kind == RefreshItem::Kind::kStep) r.index = new_index[r.index];
  // A write-back of a value with a per-call layout is refreshed after everything else.
  for (int q : dynamic_copies) plan.refresh.push_back({RefreshItem::Kind::kStep, q});
  st.copies.clear();
}

}  // namespace inplace
