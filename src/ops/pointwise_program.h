// The program of a fused_pointwise step: a chain of elementwise ops (the op codes of
// ops/elementwise_codes.h) over N broadcast inputs, as a list of fixed-width instructions that
// every backend interprets. Instruction i defines register i (SSA: an operand names an earlier
// instruction), with the dtype its result has in eager PyTorch, so each intermediate rounds to
// its dtype as the unfused ops would. Plain enums and structs, so a .cu file may include it.
//
// Encoding (an int list attribute, kWidth ints per instruction, every field in [0, 2^32) so no
// value is ever read as a runtime scalar):
//   op     dtype  a       b          c        d
//   kLoad  T      input   -          -        -         T must be the input's dtype
//   kConst T      kind    lo32       hi32     -         kind: ScalarKind | kConstInOpmath
//   kCast  T      reg     -          -        -         convert<T>(reg), as a copy does
//   kUnary T      reg     UnaryOp    -        -         reg's dtype is T
//   kBinary T     reg     reg        BinaryOp -         both T; alpha is 1
//   kPowScalar T  reg     kind       lo32     hi32      reg ** number, torch's pow_scalar paths
//   kCompare C    reg     reg        CompareOp -        both C; the register is bool
//   kWhere T      cond    reg        reg      -         cond bool, both T
//   kStore T      reg     -          -        -         the last instruction; the result's dtype
//   kReduce T     reg     ReduceOp   -        -         fused_rows only: reg (dtype T, floating)
//                                                       reduced over its row (the last dim), the
//                                                       row's value in every element of the row
#pragma once
#include <cstdint>

namespace inplace::pointwise {

enum class Opcode : uint8_t {
  kLoad,
  kConst,
  kCast,
  kUnary,
  kBinary,
  kPowScalar,
  kCompare,
  kWhere,
  kStore,
  kReduce
};
inline constexpr int kNumOpcodes = 10;

// kReduce's reductions, each as the unfused op computes it over the last dim with keepdim
// (sum.dim_IntList, mean.dim, amax, amin) on that backend.
enum class ReduceOp : uint8_t { kSum, kMean, kMax, kMin };
inline constexpr int kNumReduceOps = 4;

// A number's kind (as Scalar's) in kConst and kPowScalar; its 64 bits are split in two halves.
enum class ScalarKind : uint8_t { kBool, kInt, kFloat };
// kConst: the number keeps its full precision in opmath instead of rounding to T first (torch
// does this for mul and div of half types).
inline constexpr int kConstInOpmath = 4;

inline constexpr int kWidth = 6;             // ints per instruction
inline constexpr int kMaxInstructions = 64;  // registers a backend may hold per element
inline constexpr int kMaxInputs = 8;

struct Instr {
  Opcode op = Opcode::kLoad;
  uint8_t dtype = 0;  // a DType
  int32_t a = 0, b = 0, c = 0, d = 0;
};

// The 64 bits of a number from two 32-bit halves.
inline constexpr uint64_t join_bits(int64_t lo, int64_t hi) {
  return (static_cast<uint64_t>(hi) << 32) | static_cast<uint64_t>(lo & 0xffffffff);
}

}  // namespace inplace::pointwise
