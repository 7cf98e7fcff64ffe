// The elementwise op codes every backend reads: which computation a binary, unary or comparison
// kernel runs, and the op-name to code tables that the op declarations (ops/elementwise_*.cpp),
// the cpu kernels (kernels/cpu) and the cuda kernels (kernels/cuda, compiled by nvcc too) all
// iterate. Written once, here: a backend numbers nothing of its own. Plain enums and constexpr
// tables, so a .cu file may include it.
#pragma once
#include <cstdint>

namespace inplace {

// Binary arithmetic: the result dtype is the compute dtype.
enum class BinaryOp : uint8_t {
  kAdd,  // a + alpha * b
  kSub,  // a - alpha * b
  kMul,
  kDiv,        // true division (floating out)
  kDivTrunc,   // rounding_mode='trunc'
  kDivFloor,   // rounding_mode='floor', floor_divide
  kRemainder,  // Python %: sign of the divisor
  kFmod,       // C fmod: sign of the dividend
  kPow,
  kMaximum,  // NaN-propagating
  kMinimum,
  kBitwiseAnd,
  kBitwiseOr,
  kBitwiseXor,
};

// Comparisons (both sides converted to the common dtype) and logical ops (each side != 0).
enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kAnd, kOr, kXor };

// Unary math: the input is converted to the result's dtype first.
enum class UnaryOp : uint8_t {
  kNeg,
  kAbs,
  kSqrt,
  kRsqrt,
  kExp,
  kLog,
  kLog2,
  kLog1p,
  kExpm1,
  kSin,
  kCos,
  kTan,
  kTanh,
  kErf,
  kSigmoid,
  kRelu,
  kGelu,      // approximate='none'
  kGeluTanh,  // approximate='tanh'
  kSilu,
  kReciprocal,
  kFloor,
  kCeil,
  kRound,  // half to even, as torch.round
  kTrunc,
  kBitwiseNot,
  kLogicalNot,  // out is bool
  kHardswish,   // x * min(max(x + 3, 0), 6) / 6
};

// How a unary op's result dtype follows its input's (the op's shape/dtype rule).
enum class UnaryRule : uint8_t {
  kNoBool,     // same dtype; bool is an error (neg, abs, relu)
  kFloat,      // integers and bool promote to float32 (sqrt, exp, sigmoid, ...)
  kFloatOnly,  // floating inputs only (gelu, silu, hardswish)
  kRounding,   // same dtype, integers pass through, bool is an error
  kIntegral,   // integers and bool only (bitwise_not)
  kToBool,     // bool result (logical_not)
};

// name(Tensor self) -> Tensor and its in-place name_: one row declares the op for every backend.
struct UnaryDecl {
  const char* name;
  UnaryOp op;
  UnaryRule rule;
  bool pointwise_tag;  // tagged kPointwise (engine may place the result on its input)
};
inline constexpr UnaryDecl kUnaryOps[] = {
    {"neg", UnaryOp::kNeg, UnaryRule::kNoBool, true},
    {"abs", UnaryOp::kAbs, UnaryRule::kNoBool, true},
    {"relu", UnaryOp::kRelu, UnaryRule::kNoBool, true},
    {"sqrt", UnaryOp::kSqrt, UnaryRule::kFloat, true},
    {"rsqrt", UnaryOp::kRsqrt, UnaryRule::kFloat, true},
    {"exp", UnaryOp::kExp, UnaryRule::kFloat, true},
    {"log", UnaryOp::kLog, UnaryRule::kFloat, true},
    {"log2", UnaryOp::kLog2, UnaryRule::kFloat, false},
    {"log1p", UnaryOp::kLog1p, UnaryRule::kFloat, false},
    {"expm1", UnaryOp::kExpm1, UnaryRule::kFloat, false},
    {"sin", UnaryOp::kSin, UnaryRule::kFloat, true},
    {"cos", UnaryOp::kCos, UnaryRule::kFloat, true},
    {"tan", UnaryOp::kTan, UnaryRule::kFloat, false},
    {"tanh", UnaryOp::kTanh, UnaryRule::kFloat, true},
    {"erf", UnaryOp::kErf, UnaryRule::kFloat, false},
    {"sigmoid", UnaryOp::kSigmoid, UnaryRule::kFloat, true},
    {"reciprocal", UnaryOp::kReciprocal, UnaryRule::kFloat, false},
    {"silu", UnaryOp::kSilu, UnaryRule::kFloatOnly, true},
    {"hardswish", UnaryOp::kHardswish, UnaryRule::kFloatOnly, true},
    {"floor", UnaryOp::kFloor, UnaryRule::kRounding, false},
    {"ceil", UnaryOp::kCeil, UnaryRule::kRounding, false},
    {"round", UnaryOp::kRound, UnaryRule::kRounding, false},
    {"trunc", UnaryOp::kTrunc, UnaryRule::kRounding, false},
    {"bitwise_not", UnaryOp::kBitwiseNot, UnaryRule::kIntegral, false},
    {"logical_not", UnaryOp::kLogicalNot, UnaryRule::kToBool, true},
};

// name.Tensor / name.Scalar (eq ... ge) or name(Tensor, Tensor) (logical_*): a bool result.
struct CompareDecl {
  const char* name;
  CompareOp op;
  bool overloads;  // .Tensor and .Scalar overloads (the comparisons); one form otherwise
};
inline constexpr CompareDecl kCompareOps[] = {
    {"eq", CompareOp::kEq, true},
    {"ne", CompareOp::kNe, true},
    {"lt", CompareOp::kLt, true},
    {"le", CompareOp::kLe, true},
    {"gt", CompareOp::kGt, true},
    {"ge", CompareOp::kGe, true},
    {"logical_and", CompareOp::kAnd, false},
    {"logical_or", CompareOp::kOr, false},
    {"logical_xor", CompareOp::kXor, false},
};

// The binary kernels: which overloads run which code, and where their operands sit (a, b; alpha
// and rounding_mode when >= 0). A name without an overload covers every overload.
struct BinaryDecl {
  const char* name;
  const char* op_name;  // what the kernel's errors name (integer division by zero)
  BinaryOp op;
  int8_t a, b, alpha, mode;
};
inline constexpr BinaryDecl kBinaryOps[] = {
    {"add.Tensor", "add", BinaryOp::kAdd, 0, 1, 2, -1},
    {"add.Scalar", "add", BinaryOp::kAdd, 0, 1, 2, -1},
    {"sub.Tensor", "sub", BinaryOp::kSub, 0, 1, 2, -1},
    {"sub.Scalar", "sub", BinaryOp::kSub, 0, 1, 2, -1},
    {"rsub.Tensor", "rsub", BinaryOp::kSub, 1, 0, 2, -1},  // other - alpha * self
    {"rsub.Scalar", "rsub", BinaryOp::kSub, 1, 0, 2, -1},
    {"mul", "mul", BinaryOp::kMul, 0, 1, -1, -1},
    {"div.Tensor", "div", BinaryOp::kDiv, 0, 1, -1, -1},
    {"div.Scalar", "div", BinaryOp::kDiv, 0, 1, -1, -1},
    {"div.Tensor_mode", "div", BinaryOp::kDiv, 0, 1, -1, 2},
    {"div.Scalar_mode", "div", BinaryOp::kDiv, 0, 1, -1, 2},
    {"__rtruediv__", "div", BinaryOp::kDiv, 1, 0, -1, -1},
    {"floor_divide", "floor_divide", BinaryOp::kDivFloor, 0, 1, -1, -1},
    {"__rfloordiv__", "floor_divide", BinaryOp::kDivFloor, 1, 0, -1, -1},
    {"remainder", "remainder", BinaryOp::kRemainder, 0, 1, -1, -1},
    {"__rmod__", "remainder", BinaryOp::kRemainder, 1, 0, -1, -1},
    {"fmod", "fmod", BinaryOp::kFmod, 0, 1, -1, -1},
    {"pow", "pow", BinaryOp::kPow, 0, 1, -1, -1},
    {"__rpow__", "pow", BinaryOp::kPow, 1, 0, -1, -1},
    {"maximum", "maximum", BinaryOp::kMaximum, 0, 1, -1, -1},
    {"minimum", "minimum", BinaryOp::kMinimum, 0, 1, -1, -1},
    {"max.other", "maximum", BinaryOp::kMaximum, 0, 1, -1, -1},  // torch.max(a, b)
    {"min.other", "minimum", BinaryOp::kMinimum, 0, 1, -1, -1},
    {"bitwise_and", "bitwise_and", BinaryOp::kBitwiseAnd, 0, 1, -1, -1},
    {"bitwise_or", "bitwise_or", BinaryOp::kBitwiseOr, 0, 1, -1, -1},
    {"bitwise_xor", "bitwise_xor", BinaryOp::kBitwiseXor, 0, 1, -1, -1},
};

// clamp's bounds: argument positions of min and max, -1 when the op has none.
struct ClampDecl {
  const char* name;
  int8_t lo, hi;
};
inline constexpr ClampDecl kClampOps[] = {
    {"clamp", 1, 2}, {"clamp_min", 1, -1}, {"clamp_max", -1, 1}};

}  // namespace inplace
