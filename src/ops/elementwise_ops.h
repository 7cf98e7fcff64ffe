// Shared by the elementwise op family (ops/elementwise_*.cpp): turning bound arguments into
// kernel operands, torch's result_type over tensors and Python numbers, broadcasting, and the
// per-family registration lists that register_elementwise_ops calls.
#pragma once
#include <initializer_list>
#include <string>

#include "kernels/cpu/elementwise.h"
#include "ops/registry.h"

namespace inplace::elementwise {

using cpu::Operand;

// A tensor or a Python number; anything else is an error naming `op`.
Operand operand(const Value& v, const char* op);
// torch.result_type: dim>0 tensors, then 0-dim tensors, then numbers, by category.
DType result_type(std::initializer_list<const Operand*> operands);
// The broadcast shape of the tensor operands (numbers are 0-dim); errors name `op`.
Shape broadcast_shape(std::initializer_list<const Operand*> operands, const char* op);
// "float32" for a tensor, "int" / "float" / "bool" for a number: for error messages.
std::string operand_str(const Operand& o);

void register_arith_ops(Registry& r);
void register_unary_ops(Registry& r);
void register_compare_ops(Registry& r);
void register_select_ops(Registry& r);
void register_copy_ops(Registry& r);

}  // namespace inplace::elementwise
