// rotary_table's arguments as every backend reads them (ops/rotary_table_ops.cpp says what it
// computes): inv_freq float32 [B1, h, 1], positions [B2, 1, S] (float32 or an integer dtype),
// sine, and the result's dtype.
#pragma once
#include "ops/registry.h"

namespace inplace::rotary_table {

// Argument positions.
enum Arg { kInvFreq = 0, kPositions = 1, kSine = 2, kDtype = 3 };

// The result's meta [B, S, 2h] of its dtype (float32 when none is given); throws naming the op
// unless the operands fit (its shape rule).
Tensor result_meta(const Args& a);

// Whether a positions tensor of this dtype is taken (float32, or an integer dtype converted to
// float32 as a cast does).
bool takes_positions(DType t);

// Whether the result may have this dtype.
bool takes_result(DType t);

}  // namespace inplace::rotary_table
