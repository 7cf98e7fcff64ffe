// rotary_embedding's arguments as every backend reads them: (x, cos, sin), one float dtype
// (float32, bfloat16 or float16), broadcast to the result's shape, sharing an even last dim.
#pragma once
#include "ops/registry.h"

namespace inplace::rotary {

// Argument positions.
enum Arg { kX = 0, kCos = 1, kSin = 2 };

// The dtypes the op takes (all three operands the same one).
bool takes_dtype(DType t);

// The result's shape; throws naming the op unless the operands fit (its shape rule).
Shape result_shape(const Args& a);

}  // namespace inplace::rotary
