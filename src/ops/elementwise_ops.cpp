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

}  // namespace elementwise

void register_elementwise_ops(Registry& r) {
  elementwise::register_arith_ops(r);
  elementwise::register_unary_ops(r);
  elementwise::register_compare_ops(r);
  elementwise::register_select_ops(r);
  elementwise::register_copy_ops(r);
}

}  // namespace inplace
