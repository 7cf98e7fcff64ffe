#include "engine/write_set.h"

#include <algorithm>

#include "engine/build_state.h"

namespace inplace {

std::vector<int> inputs_written_by(const Step& s) {
  std::vector<int> out;
  if (s.kind == StepKind::kView) return out;  // views of an input: metadata, no write
  for (const TensorRef& o : s.outs)
    if (o.buffer.kind == BufferKind::kInput &&
        std::find(out.begin(), out.end(), o.buffer.index) == out.end())
      out.push_back(o.buffer.index);
  return out;
}

std::vector<bool> inputs_written(const Plan& plan) {
  std::vector<bool> out(plan.inputs.size(), false);
  for (const Step& s : plan.steps)
    for (int i : inputs_written_by(s))
      if (i >= 0 && i < static_cast<int>(out.size())) out[i] = true;
  return out;
}

void check_write_set(const Plan& plan) {
  const int n = static_cast<int>(plan.inputs.size());
  const std::vector<int>& m = plan.mutated_inputs;
  for (size_t k = 0; k < m.size(); ++k)
    IP_CHECK(m[k] >= 0 && m[k] < n && (k == 0 || m[k - 1] < m[k]), kCorrupt,
             "[plan] mutated inputs must be distinct input indices in order, got ", m[k],
             " at position ", k, " (", n, " inputs)");
  auto mutated = [&](int i) { return std::binary_search(m.begin(), m.end(), i); };
  std::vector<bool> aliased(n, false);
  for (const Mutation& a : plan.aliased_io) {
    IP_CHECK(a.input >= 0 && a.input < n, kCorrupt, "[plan] aliased input ", a.input,
             " out of range");
    IP_CHECK(mutated(a.input), kCorrupt, "[plan] aliased input '", plan.inputs[a.input].name,
             "' is not listed as mutated");
    aliased[a.input] = true;
  }
  // The first step from which on every step is a copy: copy-back writes start there at the
  // earliest, after everything the call computes (so a failed call leaves them untouched).
  size_t trailing = plan.steps.size();
  while (trailing > 0 && plan.steps[trailing - 1].kind == StepKind::kCopy) --trailing;
  for (size_t q = 0; q < plan.steps.size(); ++q) {
    const Step& s = plan.steps[q];
    IP_CHECK(!s.op || s.op->schema.mutated_args().empty(), kCorrupt, "[plan] step '", s.node,
             "' runs op '", s.op ? s.op->schema.full_name() : "?",
             "', which writes its arguments; engine steps write only their results");
    for (int i : inputs_written_by(s)) {
      IP_CHECK(mutated(i), kCorrupt, "[plan] step '", s.node, "' writes input binding '",
               plan.inputs[i].name,
               "', which the engine does not declare as mutated (an input the program does not "
               "mutate is never written)");
      IP_CHECK(aliased[i] || (s.kind == StepKind::kCopy && q >= trailing), kCorrupt,
               "[plan] step '", s.node, "' writes input binding '", plan.inputs[i].name,
               "' before the call ends; it is not aliased, so only the copy steps that end the "
               "call may write it back");
    }
  }
}

bool may_fail_mid_write(const Step& s) {
  if (s.kind == StepKind::kCopy || !s.op) return false;
  const std::string& name = s.op->schema.name;
  if (name == "kv_cache_update" || name == "index_copy" || name == "index_fill" ||
      name == "index_add")
    return false;
  return !is_elementwise(s.op);
}

}  // namespace inplace
