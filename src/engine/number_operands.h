// A tensor passed for a number (a 0-d tensor t in torch.full((2,), t) or x.add(y, alpha=t)) is
// an operand the kernel reads on every call. Over metas it has no value: shape rules read it as
// a stand-in value (the plan builder checks that the shapes do not depend on it).
#pragma once
#include "ops/registry.h"

namespace inplace {

// `args` with every one-element meta tensor (each dim 1) at a number position (Scalar, float,
// bool) replaced by a tensor of its dtype holding `value`; `any` says whether there was one.
Args number_operands_as(const OpDef& op, const Args& args, int64_t value, bool* any = nullptr);

}  // namespace inplace
