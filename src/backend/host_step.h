// A step that runs on the host in an engine of another device (Step::on_host): the engine's
// device has no kernel for its op, or its kernel refuses the step's arguments, so the step runs
// on the cpu with the copies it needs. Every backend runs such steps through run_host_step.
#pragma once
#include <cstdint>

#include "backend/backend.h"

namespace inplace {

// Waits for the work on `queue`, copies step q's tensor operands to host memory, runs its cpu
// kernel there (`steps.kernels`: the cpu's kernel, or null for an eager step), copies each
// result back into its buffer on `backend`'s device, ordered on `queue`, and waits for those
// copies. A result that is exactly one of the operands' views (an in-place kernel's) stays
// that operand's host copy, so the kernel sees the aliasing it was planned with.
void run_host_step(const PreparedSteps& steps, size_t q, const Backend& backend, void* queue);

// The bytes a step on the host moves per call: its operands to the host and its results back,
// at their planned sizes (a dynamic one at its bound).
int64_t host_step_bytes(const Step& s);

}  // namespace inplace
