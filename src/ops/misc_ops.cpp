// Reading a one-element tensor into a Python number: x.item(), aten._local_scalar_dense. A
// compiled engine can only do this for values that are runtime scalars (read from integer
// inputs, or integer arithmetic on them); anything else is refused at compile time.
#include "ops/registry.h"

namespace inplace {

void register_misc_ops(Registry& r) {
  auto item = [](const char* name) {
    return [name](const Args& a) {
      const Tensor& t = a[0].as_tensor(name);
      IP_CHECK(t.numel() == 1, kInvalidArgument, "[", name, "] a Tensor with ", t.numel(),
               " elements cannot be converted to Scalar");
      return Value::from_scalar(t.item());
    };
  };
  r.add_eager("item(Tensor self) -> Scalar", item("item"));
  r.add_eager("_local_scalar_dense(Tensor self) -> Scalar", item("_local_scalar_dense"));
}

}  // namespace inplace
