#include "ops/elementwise_ops.h"

namespace inplace {

namespace elementwise {

Operand operand(const Value& v, const char* op) {
  if (v.is_tensor()) return Operand(v.tensor);
  IP_CHECK(v.is_number(), kInvalidArgument, "[", op, "] expected a tensor or a number, got ",
           v.kind_name());
  return Operand(v.as_scalar(op));
}

DType result_type(std::initializer_list<const Operand*> operands) {
  ResultType rt;
  for (const Operand* o : operands) {
    if (o->is_tensor())
      rt.add_tensor(o->tensor.dtype(), o->tensor.dim());
    else if (o->scalar.is_bool())
      rt.add_scalar_bool();
    else if (o->scalar.is_int())
      rt.add_scalar_int();
    else
      rt.add_scalar_float();
  }
  return rt.result();
}

Shape broadcast_shape(std::initializer_list<const Operand*> operands, const char* op) {
  Shape shape;
  for (const Operand* o : operands)
    if (o->is_tensor()) shape = broadcast_shapes(shape, o->tensor.shape(), op);
  return shape;
}

std::string operand_str(const Operand& o) {
  if (o.is_tensor()) return str_cat(dtype_name(o.tensor.dtype()), shape_str(o.tensor.shape()));
  return o.scalar.is_bool() ? "bool" : (o.scalar.is_int() ? "int" : "float");
}

BinaryOp div_mode(const std::vector<Value>& args, int index) {
  if (index < 0 || args[index].is_none()) return BinaryOp::kDiv;
  const std::string& mode = args[index].as_string("div");
  if (mode == "trunc") return BinaryOp::kDivTrunc;
  if (mode == "floor") return BinaryOp::kDivFloor;
  IP_FAIL(kInvalidArgument,
          "[div] expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", mode,
          "'");
}

UnaryOp gelu_kind(const Value& approximate) {
  const std::string& a = approximate.as_string("gelu");
  if (a == "none") return UnaryOp::kGelu;
  if (a == "tanh") return UnaryOp::kGeluTanh;
  IP_FAIL(kInvalidArgument, "[gelu] approximate must be 'none' or 'tanh', got '", a, "'");
}

ClampArgs clamp_args(const std::vector<Value>& args, const char* op, int lo, int hi) {
  ClampArgs c;
  c.self = Operand(args[0].as_tensor(op));
  if (lo >= 0 && !args[lo].is_none()) c.lo = operand(args[lo], op);
  if (hi >= 0 && !args[hi].is_none()) c.hi = operand(args[hi], op);
  return c;
}

}  // namespace elementwise

void register_elementwise_ops(Registry& r) {
  elementwise::register_arith_ops(r);
  elementwise::register_unary_ops(r);
  elementwise::register_compare_ops(r);
  elementwise::register_select_ops(r);
  elementwise::register_copy_ops(r);
}

}  // namespace inplace
