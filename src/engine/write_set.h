// What a plan may write in the caller's memory. A step writes its results (`outs`); an op that
// writes its own arguments (add_, copy_, index_put_: `Tensor(a!)` in its schema) never appears
// in a plan, so outs are the whole write set. check_write_set holds every plan, built or
// loaded, to what it declares: only inputs listed in Plan::mutated_inputs are written, an
// aliased input (in place) by any step, a copy-back input only by the copy steps that end the
// call, so a crafted engine file cannot widen what an engine writes.
#pragma once
#include <vector>

#include "backend/plan.h"

namespace inplace {

// The input bindings step `s` writes (indices, in order of its results, without repeats).
std::vector<int> inputs_written_by(const Step& s);
// Per input binding: does any step write it?
std::vector<bool> inputs_written(const Plan& plan);
// Throws kCorrupt naming the step and the binding when a step writes an input that
// plan.mutated_inputs does not list, writes its arguments (a mutating op), or writes a
// copy-back input (mutated, not aliased) other than in the trailing copy steps; and when
// mutated_inputs is not a sorted list of input indices that includes every aliased input.
void check_write_set(const Plan& plan);
// Can step `s` fail after it started writing its results? False for steps whose kernels check
// everything that depends on the call's values before their first write (copies,
// kv_cache_update, index_copy/index_fill/index_add, elementwise ops).
bool may_fail_mid_write(const Step& s);

}  // namespace inplace
