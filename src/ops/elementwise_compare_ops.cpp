// Comparisons (eq ne lt le gt ge) and logical and/or/xor: bool results, computed in the
// common dtype of both sides. The in-place forms keep self's dtype (x.ge_(y) writes 0/1).
#include <string>

#include "ops/elementwise_ops.h"

namespace inplace::elementwise {

namespace {

using cpu::CompareOp;

void add_compare(Registry& r, const std::string& schema, const char* op, CompareOp kind) {
  r.add_out(
      schema,
      [op](const Args& args) {
        const Operand a = operand(args[0], op), b = operand(args[1], op);
        return std::vector<Tensor>{Tensor::meta(broadcast_shape({&a, &b}, op), DType::kBool)};
      },
      [op, kind](const Args& args, const std::vector<Tensor>& out) {
        const Operand a = operand(args[0], op), b = operand(args[1], op);
        cpu::compare(kind, out[0], a, b, result_type({&a, &b}));
      });
}

}  // namespace

void register_compare_ops(Registry& r) {
  struct Def {
    const char* name;
    CompareOp kind;
  };
  for (const Def& d :
       {Def{"eq", CompareOp::kEq}, Def{"ne", CompareOp::kNe}, Def{"lt", CompareOp::kLt},
        Def{"le", CompareOp::kLe}, Def{"gt", CompareOp::kGt}, Def{"ge", CompareOp::kGe}}) {
    const std::string n = d.name;
    add_compare(r, n + ".Tensor(Tensor self, Tensor other) -> Tensor", d.name, d.kind);
    add_compare(r, n + ".Scalar(Tensor self, Scalar other) -> Tensor", d.name, d.kind);
    r.add_inplace(n + "_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", n + ".Tensor");
    r.add_inplace(n + "_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", n + ".Scalar");
  }
  for (const Def& d : {Def{"logical_and", CompareOp::kAnd}, Def{"logical_or", CompareOp::kOr},
                       Def{"logical_xor", CompareOp::kXor}}) {
    const std::string n = d.name;
    add_compare(r, n + "(Tensor self, Tensor other) -> Tensor", d.name, d.kind);
    r.add_inplace(n + "_(Tensor(a!) self, Tensor other) -> Tensor(a!)", n);
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
