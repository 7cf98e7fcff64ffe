// One op run eagerly on the cpu, as the interpreter runs each node: infer, allocate, call the
// cpu kernel from the kernel table. An op with unplanned results runs its cpu eager kernel; a
// view or metadata op its own function; an in-place op its functional twin, written back into
// self; name.nn_functional(..., inplace) runs name or name_.
#pragma once
#include "ops/registry.h"

namespace inplace {

Value eager_call(const OpDef& op, const Args& args);
// Whether eager_call can run `op` (a loaded plan's eager steps are checked with it).
bool has_eager(const OpDef& op);

}  // namespace inplace
