// Epilogue programs (fused_pointwise programs over one input) for the GEMV epilogue tests:
// GPT-2's GELU-tanh as torch.export records it, and the instruction helper.
#pragma once
#include <vector>

#include "ops/fused_pointwise_args.h"

namespace inplace::testing {

inline pointwise::Instr instr(pointwise::Opcode op, DType t, int32_t a = 0, int32_t b = 0,
                              int32_t c = 0, int32_t d = 0) {
  pointwise::Instr in;
  in.op = op;
  in.dtype = static_cast<uint8_t>(t);
  in.a = a, in.b = b, in.c = c, in.d = d;
  return in;
}

// GPT-2's GELU-tanh at dtype t, 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))): every
// register of t (the epilogue's float-register form).
inline std::vector<int64_t> gelu_tanh(DType t) {
  using pointwise::Opcode;
  auto number = [&](double v) {
    int32_t kind, lo, hi;
    pointwise::split_number(Scalar(v), &kind, &lo, &hi);
    return instr(Opcode::kConst, t, kind, lo, hi);
  };
  auto binary = [&](BinaryOp op, int32_t a, int32_t b) {
    return instr(Opcode::kBinary, t, a, b, static_cast<int32_t>(op));
  };
  int32_t kind, lo, hi;
  pointwise::split_number(Scalar(3.0), &kind, &lo, &hi);
  return pointwise::encode(
      {instr(Opcode::kLoad, t), instr(Opcode::kPowScalar, t, 0, kind, lo, hi), number(0.044715),
       binary(BinaryOp::kMul, 2, 1), binary(BinaryOp::kAdd, 0, 3), number(0.7978845608028654),
       binary(BinaryOp::kMul, 5, 4),
       instr(Opcode::kUnary, t, 6, static_cast<int32_t>(UnaryOp::kTanh)), number(1.0),
       binary(BinaryOp::kAdd, 8, 7), number(0.5), binary(BinaryOp::kMul, 10, 0),
       binary(BinaryOp::kMul, 11, 9), instr(Opcode::kStore, t, 12)});
}

}  // namespace inplace::testing
