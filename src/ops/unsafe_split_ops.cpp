// unsafe_split: torch.split without view tracking (what traced GRU/LSTM cells and some exported
// graphs record). Its results share self's memory exactly like split's, so it is registered
// as the same view op; the view rules (passes/view_rules.cpp) already treat it as split.
#include "ops/registry.h"

namespace inplace {

namespace {

Value tensors_value(const std::vector<Tensor>& ts) {
  std::vector<Value> items;
  items.reserve(ts.size());
  for (const Tensor& t : ts) items.push_back(Value::from_tensor(t));
  return Value::list(std::move(items));
}

}  // namespace

void register_unsafe_split_ops(Registry& r) {
  r.add_view(
      "unsafe_split.Tensor(Tensor(a) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
      [](const Args& a) {
        const Tensor& self = a[0].as_tensor("unsafe_split");
        return tensors_value(self.split(a[1].as_int("unsafe_split"), a[2].as_int("unsafe_split")));
      });
  r.add_view("unsafe_split.sizes(Tensor(a) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]",
             [](const Args& a) {
               const Tensor& self = a[0].as_tensor("unsafe_split");
               return tensors_value(self.split_with_sizes(a[1].as_int_list("unsafe_split"),
                                                          a[2].as_int("unsafe_split")));
             });
}

}  // namespace inplace
