// ExecutionContext's runtime contract (docs/engine.md, "The runtime contract"): the overlap
// check of the bindings, the per-call gather of strided read-only inputs, and what a failed
// call leaves behind.
#include <algorithm>

#include "engine/binding_checks.h"
#include "engine/execution_context.h"
#include "engine/write_set.h"

namespace inplace {

namespace {
std::string quoted_names(const Plan& plan, const std::vector<int>& inputs) {
  std::string s;
  for (int i : inputs) s += (s.empty() ? "'" : ", '") + plan.inputs[i].name + "'";
  return s;
}
}  // namespace

void ExecutionContext::check_bindings() {
  const Plan& plan = engine_->plan();
  IP_CHECK(partly_updated_.empty(), kInvalidArgument, "[execute] a failed call left input(s) ",
           quoted_names(plan, partly_updated_),
           " partly updated; rebind them (bind_input) or call reset() before the next call");
  if (bindings_checked_) {
    // Read-only inputs bound again since (a decode loop's token and position every call): each
    // against the written bindings, O(rebound x written), not every pair again.
    if (rebound_inputs_.empty()) return;
    std::vector<BoundMemory> bound;
    for (int i : rebound_inputs_)
      bound.push_back({"input", &plan.inputs[i].name, memory_span(bound_inputs_[i]), false});
    const size_t rebound = bound.size();
    for (size_t i = 0; i < plan.inputs.size(); ++i)
      if (input_written_[i])
        bound.push_back({"input", &plan.inputs[i].name, memory_span(bound_inputs_[i]), true});
    for (size_t k = 0; k < bound_outputs_.size(); ++k)
      if (bound_outputs_[k].defined())
        bound.push_back(
            {"output", &output_name_of_buffer(k), memory_span(bound_outputs_[k]), true});
    check_overlaps_with(bound, rebound);
    rebound_inputs_.clear();
    return;
  }
  rebound_inputs_.clear();
  std::vector<BoundMemory> bound;
  bound.reserve(plan.inputs.size() + bound_outputs_.size());
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    bound.push_back(
        {"input", &plan.inputs[i].name, memory_span(bound_inputs_[i]), input_written_[i]});
  for (size_t k = 0; k < bound_outputs_.size(); ++k)
    if (bound_outputs_[k].defined())
      bound.push_back({"output", &output_name_of_buffer(k), memory_span(bound_outputs_[k]), true});
  check_binding_overlaps(bound);
  bindings_checked_ = true;
}

// bind_output takes plain result buffers only: one output is the buffer.
const std::string& ExecutionContext::output_name_of_buffer(size_t k) const {
  const Plan& plan = engine_->plan();
  for (size_t j = 0; j < plan.output_refs.size(); ++j)
    if (plan.output_refs[j].buffer == BufferId{BufferKind::kOutput, static_cast<int32_t>(k)})
      return plan.outputs[j].name;
  IP_ASSERT(false, "a bound output buffer is some output's");
}

void ExecutionContext::gather_staged_inputs() {
  KernelContext c;
  c.queue = call_.queue;
  for (size_t i = 0; i < input_staged_.size(); ++i)
    if (input_staged_[i])
      (*KernelTable::get().copy_kernel(device_.type))({Value::from_tensor(bound_inputs_[i])},
                                                      {staged_inputs_[i]}, c);
}

// Each prepared binding whose source was bound (or written) since it was made: made again from
// the bound source, ordered on the call's queue before its steps. The address stays.
void ExecutionContext::make_prepared_inputs() {
  const Plan& plan = engine_->plan();
  KernelContext c;
  c.queue = call_.queue;
  for (size_t k = 0; k < plan.prepared.size(); ++k) {
    if (!prepared_stale_[k]) continue;
    const PreparedInput& p = plan.prepared[k];
    (*KernelTable::get().copy_kernel(device_.type))(
        {Value::from_tensor(bound_inputs_[p.source].permute(p.perm))}, {bound_inputs_[p.input]}, c);
    prepared_stale_[k] = false;
    ++stats_.prepared_inputs;
  }
}

std::string ExecutionContext::note_failed_call(size_t first, size_t last) {
  const Plan& plan = engine_->plan();
  std::vector<int> written, maybe;
  for (size_t q = 0; q < first; ++q)
    for (int i : inputs_written_by(plan.steps[q]))
      if (std::find(written.begin(), written.end(), i) == written.end()) written.push_back(i);
  for (size_t q = first; q <= last; ++q)
    if (may_fail_mid_write(plan.steps[q]) || q < last)
      for (int i : inputs_written_by(plan.steps[q]))
        if (std::find(written.begin(), written.end(), i) == written.end() &&
            std::find(maybe.begin(), maybe.end(), i) == maybe.end())
          maybe.push_back(i);
  partly_updated_ = written;
  partly_updated_.insert(partly_updated_.end(), maybe.begin(), maybe.end());
  std::sort(partly_updated_.begin(), partly_updated_.end());
  if (partly_updated_.empty()) return "";
  std::string what;
  if (!written.empty())
    what = str_cat("had already written caller input(s) ", quoted_names(plan, written));
  if (!maybe.empty())
    what += str_cat(what.empty() ? "" : " and ", "may have partly written caller input(s) ",
                    quoted_names(plan, maybe));
  return str_cat(" (the failed call ", what,
                 ", which are now partly updated; the context refuses further calls until they "
                 "are rebound with bind_input or reset() is called)");
}

void ExecutionContext::reset() {
  InFlightGuard guard(in_flight_, "reset", engine_->name());
  partly_updated_.clear();
}

}  // namespace inplace
