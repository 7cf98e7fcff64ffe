// The host side of the CUDA fused_pointwise kernel (plain C++): a checked program with its
// operands, passed by value to one launch, so the program sits in the kernel's parameter space
// and a captured CUDA graph replays it as is.
#pragma once
#include <string>
#include <vector>

#include "kernels/cuda/launch.h"
#include "ops/fused_pointwise_args.h"

namespace inplace::cuda {

struct FusedPointwise {
  pointwise::Instr code[pointwise::kMaxInstructions];
  uint8_t reg[pointwise::kMaxInstructions] = {};  // each register's dtype (a comparison's: bool)
  int n_code = 0;
  Operand inputs[pointwise::kMaxInputs];  // each broadcast to out's shape
  Operand out;
};

// One thread per output element runs p's program (fused_pointwise.cu).
void fused_pointwise(const FusedPointwise& p, void* stream);
// a and b (independent: neither reads what the other writes) in one launch, each as
// fused_pointwise computes it (a launch group's pair: two programs over the same inputs).
void fused_pointwise_pair(const FusedPointwise& a, const FusedPointwise& b, void* stream);

// fused_rows: p's program (with kReduce instructions) over the rows of out's last dim, `cols`
// long: a block a row, each reduction summed as the unfused reduction kernel sums a row
// (fused_pointwise.cu).
void fused_rows(const FusedPointwise& p, int64_t cols, void* stream);

// "" when the kernel computes `program` over inputs of these shapes and dtypes bit for bit as
// the unfused CUDA kernels compute its chain; else why not (fused_pointwise_kernels.cpp).
std::string fused_pointwise_refusal(const pointwise::Program& program,
                                    const std::vector<Tensor>& inputs);

}  // namespace inplace::cuda
