// fused_pointwise(Tensor[] inputs, int[] program) -> Tensor: a chain of elementwise ops in one
// step (the fuse_pointwise pass writes it). fused_rows(Tensor[] inputs, int[] program) -> Tensor:
// the same with row reductions (kReduce over the last dim) among them. Its program
// (ops/pointwise_program.h) is decoded and checked here, once for the shape rule and once per
// kernel call, so no backend ever runs an instruction that reads a register not yet written, an
// input that is not there, or an op on a dtype its kernel lacks: a malformed program is an error
// naming the instruction.
#pragma once
#include <vector>

#include "core/dtype.h"
#include "core/scalar.h"
#include "ops/elementwise_codes.h"
#include "ops/pointwise_program.h"

namespace inplace::pointwise {

struct Program {
  std::vector<Instr> code;
  std::vector<DType> reg;  // the dtype of each instruction's register
  DType out = DType::kFloat32;
  int reductions = 0;  // kReduce instructions (fused_rows only)
};

// Decodes `ints` for inputs of `inputs` dtypes; throws kInvalidArgument naming the instruction
// (and the op: `rows` for fused_rows, whose programs may hold kReduce).
Program decode(const std::vector<int64_t>& ints, const std::vector<DType>& inputs,
               bool rows = false);
std::vector<int64_t> encode(const std::vector<Instr>& code);

// The number a kConst or kPowScalar encodes (kind without kConstInOpmath, two halves).
Scalar number_of(int32_t kind, int32_t lo, int32_t hi);
// kind, lo, hi of a number.
void split_number(Scalar s, int32_t* kind, int32_t* lo, int32_t* hi);

// Which (op, dtype) pairs the backends run, as the unfused kernels do without raising.
bool unary_supports(UnaryOp op, DType t);
bool binary_supports(BinaryOp op, DType t);
bool compare_supports(CompareOp op, DType t);

}  // namespace inplace::pointwise
