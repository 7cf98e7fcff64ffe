// Argument decoding of the elementwise ops, read by the op declarations (shape/dtype rules) and
// by every backend's kernels: a bound argument as a tensor-or-number operand, torch's
// result_type over tensors and Python numbers, broadcasting, rounding modes and clamp bounds.
#pragma once
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include "core/scalar.h"
#include "core/tensor.h"
#include "core/value.h"
#include "ops/elementwise_codes.h"

namespace inplace::elementwise {

// A kernel input: a tensor, or a Python number (a wrapped scalar, never materialised).
struct Operand {
  Tensor tensor;  // undefined for a number
  Scalar scalar;

  Operand() = default;
  Operand(Tensor t) : tensor(std::move(t)) {}  // NOLINT: either form reads naturally
  Operand(Scalar s) : scalar(s) {}             // NOLINT
  bool is_tensor() const { return tensor.defined(); }
};

// A tensor or a Python number; anything else is an error naming `op`.
Operand operand(const Value& v, const char* op);
// torch.result_type: dim>0 tensors, then 0-dim tensors, then numbers, by category.
DType result_type(std::initializer_list<const Operand*> operands);
// The broadcast shape of the tensor operands (numbers are 0-dim); errors name `op`.
Shape broadcast_shape(std::initializer_list<const Operand*> operands, const char* op);
// "float32" for a tensor, "int" / "float" / "bool" for a number: for error messages.
std::string operand_str(const Operand& o);

// div's rounding_mode (args[index]; index < 0: none): kDiv, kDivTrunc or kDivFloor.
BinaryOp div_mode(const std::vector<Value>& args, int index);
// gelu's approximate: kGelu or kGeluTanh.
UnaryOp gelu_kind(const Value& approximate);

// clamp(self, min, max) with either bound optional (lo / hi: argument positions, -1 for none).
struct ClampArgs {
  Operand self;
  std::optional<Operand> lo, hi;
};
ClampArgs clamp_args(const std::vector<Value>& args, const char* op, int lo, int hi);

// copy(self, src): src (a tensor or a number) must broadcast to self's shape.
void check_copy_src(const Tensor& self, const Value& src, const char* op);
// fill's value: a number or a 0-dim tensor (returned).
const Value& fill_value(const Value& v, const char* op);

// The casts (to, every overload; type; type_as; float() long() ...): self, the result's dtype,
// and whether a copy is asked for even when nothing changes (to(copy=True)). A cast returns
// self itself when nothing changes, as torch's.
struct CastArgs {
  Tensor self;
  DType dtype = DType::kFloat32;
  bool copy = false;
};
CastArgs cast_args(const std::string& op_name, const std::string& overload,
                   const std::vector<Value>& args);
inline constexpr const char* kCastOps[] = {"to",   "type",     "type_as", "float", "double",
                                           "half", "bfloat16", "long",    "int",   "short",
                                           "char", "byte",     "bool"};

}  // namespace inplace::elementwise
