// Known spellings of pointwise programs, for kernels that run one as straight-line code instead
// of interpreting it (ops/pointwise_program.h): the same operations on the same operands, so the
// same bits as the interpreter, with no dispatch and a few instructions of code.
#pragma once
#include "ops/pointwise_program.h"

namespace inplace::pointwise {

// GPT-2's gelu_new as torch.export records Hugging Face's NewGELUActivation, every instruction of
// one dtype:
//   (x * half) * ((tanh((x + (x ** p) * a) * c)) + one)
// add and mul with their operands in either order (each is commutative in IEEE arithmetic), the
// numbers kConst instructions, p a kPowScalar's exponent. The numbers as float, as the
// one-dtype interpreter holds them (not rounded to the dtype): half, p, a, c, one.
struct GeluNew {
  float half = 0, p = 0, a = 0, c = 0, one = 0;
};

// Whether code[0, n) is that program; fills *form with its numbers when it is.
bool match_gelu_new(const Instr* code, int n, GeluNew* form);

}  // namespace inplace::pointwise
