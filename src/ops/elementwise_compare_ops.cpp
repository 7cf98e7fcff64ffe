// Comparisons (eq ne lt le gt ge) and logical and/or/xor: bool results, computed in the
// common dtype of both sides. The in-place forms keep self's dtype (x.ge_(y) writes 0/1).
#include <string>

#include "ops/elementwise_ops.h"

namespace inplace::elementwise {

namespace {

void add_compare(Registry& r, const std::string& schema, const char* op) {
  r.add_out(
      schema,
      [op](const Args& args) {
        const Operand a = operand(args[0], op), b = operand(args[1], op);
        return std::vector<Tensor>{Tensor::meta(broadcast_shape({&a, &b}, op), DType::kBool)};
      },
      nullptr);
}

}  // namespace

void register_compare_ops(Registry& r) {
  for (const CompareDecl& d : kCompareOps) {
    const std::string n = d.name;
    if (d.overloads) {
      add_compare(r, n + ".Tensor(Tensor self, Tensor other) -> Tensor", d.name);
      add_compare(r, n + ".Scalar(Tensor self, Scalar other) -> Tensor", d.name);
      r.add_inplace(n + "_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", n + ".Tensor");
      r.add_inplace(n + "_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", n + ".Scalar");
    } else {
      add_compare(r, n + "(Tensor self, Tensor other) -> Tensor", d.name);
      r.add_inplace(n + "_(Tensor(a!) self, Tensor other) -> Tensor(a!)", n);
    }
  }
  const std::pair<const char*, const char*> kAliases[] = {
      {"__eq__", "eq"},  {"__ne__", "ne"},    {"__lt__", "lt"},        {"__le__", "le"},
      {"__gt__", "gt"},  {"__ge__", "ge"},    {"not_equal", "ne"},     {"not_equal_", "ne_"},
      {"less", "lt"},    {"less_", "lt_"},    {"less_equal", "le"},    {"less_equal_", "le_"},
      {"greater", "gt"}, {"greater_", "gt_"}, {"greater_equal", "ge"}, {"greater_equal_", "ge_"},
  };
  for (const auto& [spelling, name] : kAliases) r.add_alias(spelling, name);
  r.tag({"logical_and", "logical_or"}, kPointwise);
}

}  // namespace inplace::elementwise
