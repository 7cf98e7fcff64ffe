#include "engine/number_operands.h"

#include <algorithm>

namespace inplace {

Args number_operands_as(const OpDef& op, const Args& args, int64_t value, bool* any) {
  Args out = args;
  bool found = false;
  for (size_t i = 0; i < out.size() && i < op.schema.args.size(); ++i) {
    const std::string t = op.schema.args[i].base_type();
    Value& v = out[i];
    if ((t == "Scalar" || t == "float" || t == "bool" || t == "number") && v.is_tensor() &&
        v.tensor.is_meta() &&
        std::all_of(v.tensor.shape().begin(), v.tensor.shape().end(),
                    [](int64_t d) { return d == 1; })) {
      v = Value::from_tensor(Tensor::full(v.tensor.shape(), Scalar(value), v.tensor.dtype()));
      found = true;
    }
  }
  if (any) *any = found;
  return out;
}

}  // namespace inplace
