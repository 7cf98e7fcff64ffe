// The cpu's interpreter of pointwise programs (ops/pointwise_program.h), shared by
// fused_pointwise and fused_rows: a program runs over blocks of at most kBlock output elements,
// one instruction at a time, each a plain loop over the block (vectorizable) into its register,
// so an intermediate never leaves the cache. Every op is the unfused kernels' functor
// (elementwise_math.h) and every register holds its dtype's opmath values rounded to the dtype,
// so a result is bitwise what the unfused chain computes.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "ops/fused_pointwise_args.h"
#include "ops/registry.h"

namespace inplace::cpu::pointwise_exec {

constexpr int64_t kBlock = 1024;

// One register: kBlock values of at most 8 bytes.
struct alignas(64) Reg {
  unsigned char bytes[kBlock * 8];
};
template <typename M>
M* as(Reg& r) {
  return reinterpret_cast<M*>(r.bytes);
}

// A tensor (input or output) seen at the output's shape.
struct View {
  char* data = nullptr;
  Shape strides;      // broadcast to the output's shape, in elements
  bool flat = false;  // contiguous in the output's element order
  bool one = false;   // one element broadcast everywhere
};

// `t` at the output's `shape` (an error naming `op` where it does not broadcast to it).
View view_of(const Tensor& t, const Shape& shape, const char* op);

// Output elements start .. start + n of `shape`: where the program reads and writes them.
struct Block {
  const pointwise::Program* p;
  Reg* regs;  // the block's registers, one an instruction
  const std::vector<View>* inputs;
  const View* out;
  const Shape* shape;
  int64_t start, n;
  const double* reduced = nullptr;  // fused_rows: each kReduce instruction's value for the row
  // fused_rows: registers that hold one value over the block in element 0 alone
  // (scalar_registers), which binary instructions read as a number.
  const std::vector<bool>* scalar = nullptr;
};

// A fused_pointwise or fused_rows (`rows`) step's input tensors (into *inputs) and its program,
// decoded and checked for their dtypes; errors name `op`.
pointwise::Program step_program(const Args& args, const char* op, bool rows,
                                std::vector<Tensor>* inputs);

// Instruction i of b's program over the block into register i (the program was decoded, so
// every operand and dtype is checked).
void exec(const Block& b, size_t i);

// The same where register i holds one value in every element of the block (its operands do:
// numbers and row values, `uniform`): computed for the first element and copied to the others.
void exec_uniform(const Block& b, size_t i);

// Which registers of `p` hold one value across a row: numbers, reductions, and what is computed
// from those only.
std::vector<bool> uniform_registers(const pointwise::Program& p);

// Which of those registers exec_uniform may leave as element 0 alone: every reader of theirs is
// a binary instruction or another uniform register (a reduction's operand, a load or a store
// needs the whole register).
std::vector<bool> scalar_registers(const pointwise::Program& p, const std::vector<bool>& uniform);

}  // namespace inplace::cpu::pointwise_exec
