// The checks torch.export writes into graphs: aten._assert_tensor_metadata (a tensor's size and
// dtype as export saw them, written before a `to` that may be a no-op). Eager runs the check;
// it writes nothing and returns nothing, so a compiled graph drops it (an engine checks every
// input's shape and dtype when it is bound, and intermediate metadata is static).
#include "ops/registry.h"

namespace inplace {

void register_export_assert_ops(Registry& r) {
  r.add_eager(
      "_assert_tensor_metadata(Tensor a, SymInt[]? size=None, SymInt[]? stride=None, "
      "ScalarType? dtype=None, *, Device? device=None, Layout? layout=None) -> ()",
      [](const Args& a) {
        const char* op = "_assert_tensor_metadata";
        const Tensor& t = a[0].as_tensor(op);
        if (!a[1].is_none()) {
          const Shape want = a[1].as_int_list(op);
          IP_CHECK(want == t.shape(), kShapeMismatch, "[", op, "] tensor of shape ",
                   shape_str(t.shape()), " does not have the exported shape ", shape_str(want));
        }
        // Strides are not checked: they are layout, which the engine chooses for its own
        // intermediates; values do not depend on them.
        if (!a[3].is_none()) {
          const DType want = a[3].as_dtype(op);
          IP_CHECK(want == t.dtype(), kDTypeMismatch, "[", op, "] tensor of dtype ",
                   dtype_name(t.dtype()), " does not have the exported dtype ", dtype_name(want));
        }
        return Value::none();
      });
}

}  // namespace inplace
