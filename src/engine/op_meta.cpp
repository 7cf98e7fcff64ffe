#include "engine/op_meta.h"

#include "backend/eager_call.h"
#include "core/value.h"

namespace inplace {

std::vector<Tensor> result_metas(const OpDef& op, const Args& given) {
  bool numbers = false;
  Args read_as_one = number_operands_as(op, given, 1, &numbers);
  const Args& args = numbers ? read_as_one : given;
  if (op.infer) return op.infer(args);
  std::vector<Value> leaves;
  flatten_value(eager_call(op, args), &leaves);
  std::vector<Tensor> out;
  for (const Value& l : leaves) {
    IP_CHECK(l.is_tensor(), kUnsupported, "[", op.schema.full_name(), "] returns a ", l.kind_name(),
             " where a tensor was planned");
    out.push_back(Tensor::meta(l.tensor.shape(), l.tensor.dtype()));
  }
  return out;
}

Value view_metas(const OpDef& op, const Args& args) {
  return eager_call(op, args);
}

Value* leaf_at(std::vector<Value>& args, const std::vector<int>& path) {
  Value* v = &args[path[0]];
  for (size_t k = 1; k < path.size(); ++k) v = &v->items[path[k]];
  return v;
}

const Value* leaf_at(const std::vector<Value>& args, const std::vector<int>& path) {
  return leaf_at(const_cast<std::vector<Value>&>(args), path);
}

}  // namespace inplace
