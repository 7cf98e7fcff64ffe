// The cpu eager kernels of getitem and setitem on tensors (Python's x[i] and x[i] = v): the index
// planned as the declarations plan it (ops/index_spec.h), then the advanced index gathered or
// written, or the basic view written. getitem on lists, tuples and dicts, and every getitem that
// gathers no data, is the op's own view function.
#include "core/error.h"
#include "kernels/cpu/index_common.h"
#include "kernels/cpu/index_kernels.h"
#include "kernels/cpu/registration.h"
#include "ops/index_spec.h"

namespace inplace::cpu {

namespace {

Tensor gather_getitem(const Tensor& self, const Value& index) {
  PlannedIndex p = plan_tensor_index(self, index, "getitem");
  if (p.basic.indices.empty()) return p.basic.view;
  if (self.is_meta()) return Tensor::meta(p.ai.result_shape, self.dtype());
  Tensor out = Tensor::empty(p.ai.result_shape, self.dtype());
  index_gather(p.basic.view, p.ai, out, "getitem");
  return out;
}

void setitem_tensor(const Tensor& self, const Value& index, const Tensor& value) {
  PlannedIndex p = plan_tensor_index(self, index, "setitem");
  const Tensor v = setitem_value(self, p, value);
  if (self.is_meta() || value.is_meta()) return;
  if (p.basic.indices.empty())
    copy_region(p.basic.view, v);
  else
    index_put(p.basic.view, p.ai, v, /*accumulate=*/false, "setitem");
}

}  // namespace

void register_getitem_kernels(KernelTable& table) {
  const OpDef* getitem = Registry::get().find("getitem");
  IP_ASSERT(getitem != nullptr && getitem->eager, "getitem is registered with its view function");
  table.add_eager(DeviceType::kCpu, "getitem", [getitem](const Args& a) {
    if (!a[0].is_tensor()) return getitem->eager(a);
    return Value::from_tensor(gather_getitem(a[0].tensor, a[1]));
  });
  table.add_eager(DeviceType::kCpu, "setitem", [](const Args& a) {
    const Tensor& self = a[0].as_tensor("setitem");
    const Value& value = a[2];
    Tensor v;
    if (value.is_number()) {
      v = Tensor::scalar(value.as_scalar("setitem"),
                         self.dtype());  // Python numbers take self's dtype
    } else {
      IP_CHECK(value.is_tensor(), kInvalidArgument, "[setitem] can't assign a ", value.kind_name(),
               " to a tensor");
      v = value.tensor;
    }
    setitem_tensor(self, a[1], v);
    return Value::none();
  });
}

}  // namespace inplace::cpu
