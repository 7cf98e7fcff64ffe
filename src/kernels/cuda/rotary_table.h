// The host side of the CUDA rotary_table kernel (plain C++): one table, or the cos and the sin
// tables of one rotary embedding (a launch group's pair) in one launch.
#pragma once
#include "kernels/cuda/launch.h"

namespace inplace::cuda {

// inv [B1, h, 1] float32, positions [B2, 1, S] (float32 or an integer dtype), out [B, S, 2h]
// (float32, bfloat16 or float16; fewer than 2^31 elements): ops/rotary_table_ops.cpp's table.
struct RotaryTable {
  Operand inv, positions, out;
  bool sine = false;
};

void rotary_table(const RotaryTable& t, void* stream);
void rotary_table_pair(const RotaryTable& a, const RotaryTable& b, void* stream);

}  // namespace inplace::cuda
