// The host side of the CUDA fused_pointwise kernel (plain C++): a decoded program with its
// operands, passed by value to one launch (the program sits in the kernel's parameter space,
// constant memory, so a captured graph replays it as is).
#pragma once
#include "kernels/cuda/launch.h"
#include "ops/pointwise_program.h"

namespace inplace::cuda {

struct FusedPointwise {
  pointwise::Instr code[pointwise::kMaxInstructions];
  int n_code = 0;
  Operand inputs[pointwise::kMaxInputs];  // each broadcast to out's shape
  Operand out;
};

void fused_pointwise(const FusedPointwise& p, void* stream);

}  // namespace inplace::cuda
