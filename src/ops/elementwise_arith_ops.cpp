// Binary arithmetic ops: add sub rsub mul div floor_divide remainder fmod pow square maximum
// minimum bitwise_{and,or,xor}, their in-place forms and operator/dunder spellings. Result
// dtypes follow torch.result_type; the bool rules and integer errors follow torch.
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>

#include "ops/elementwise_ops.h"

namespace inplace::elementwise {

namespace {

struct Binary {
  Operand a, b;
  Shape shape;
  DType common = DType::kFloat32;
};

Binary bind_binary(const Args& args, const char* op, int ia, int ib) {
  Binary c;
  c.a = operand(args[ia], op);
  c.b = operand(args[ib], op);
  c.shape = broadcast_shape({&c.a, &c.b}, op);
  c.common = result_type({&c.a, &c.b});
  return c;
}

// Validates the arguments and returns the result dtype (runs on metas at plan time).
using DTypeRule = std::function<DType(const Binary&, const Args&)>;

// Declares a broadcasting binary op over args[ia] (left) and args[ib] (right); its kernels read
// the same positions from kBinaryOps (ops/elementwise_codes.h).
void add_binary(Registry& r, const std::string& schema, const char* op, int ia, int ib,
                DTypeRule rule) {
  r.add_out(
      schema,
      [=](const Args& args) {
        Binary c = bind_binary(args, op, ia, ib);
        return std::vector<Tensor>{Tensor::meta(c.shape, rule(c, args))};
      },
      nullptr);
}

bool is_bool_operand(const Operand& o) {
  return o.is_tensor() ? o.tensor.dtype() == DType::kBool : o.scalar.is_bool();
}

void check_not_bool(const char* op, DType t) {
  IP_CHECK(t != DType::kBool, kDTypeMismatch, "[", op, "] not implemented for bool");
}

// torch's alpha_check.
DType check_alpha(const char* op, const Binary& c, Scalar alpha) {
  IP_CHECK(!alpha.is_bool() || c.common == DType::kBool, kInvalidArgument, "[", op,
           "] boolean alpha only supported for boolean results, got ", dtype_name(c.common));
  IP_CHECK(is_floating(c.common) || !alpha.is_float(), kInvalidArgument, "[", op,
           "] for integral input tensors, argument alpha must not be a floating point number (",
           dtype_name(c.common), ")");
  return c.common;
}

// torch's sub_check.
void check_sub(const char* op, const Binary& c) {
  const bool ab = is_bool_operand(c.a), bb = is_bool_operand(c.b);
  IP_CHECK(!(ab && bb), kDTypeMismatch, "[", op,
           "] subtraction, the `-` operator, with two bool tensors is not supported. Use the "
           "`^` or `logical_xor()` operator instead.");
  IP_CHECK(!(ab || bb), kDTypeMismatch, "[", op,
           "] subtraction, the `-` operator, with a bool tensor is not supported. If you are "
           "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
}

void register_add_sub_mul(Registry& r) {
  // add / sub / rsub share a kernel; alpha is argument 2 in every overload.
  auto alpha_rule = [](const char* op, bool sub) -> DTypeRule {
    return [op, sub](const Binary& c, const Args& args) {
      if (sub) check_sub(op, c);
      return check_alpha(op, c, args[2].as_scalar(op));
    };
  };
  const DTypeRule add_rule = alpha_rule("add", false);
  add_binary(r, "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", "add", 0, 1,
             add_rule);
  add_binary(r, "add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", "add", 0, 1,
             add_rule);
  r.add_inplace("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
                "add.Tensor");
  r.add_inplace("add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
                "add.Scalar");

  const DTypeRule sub_rule = alpha_rule("sub", true);
  add_binary(r, "sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", "sub", 0, 1,
             sub_rule);
  add_binary(r, "sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", "sub", 0, 1,
             sub_rule);
  r.add_inplace("sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
                "sub.Tensor");
  r.add_inplace("sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
                "sub.Scalar");

  // rsub(self, other, alpha) = other - alpha * self
  const DTypeRule rsub_rule = alpha_rule("rsub", true);
  add_binary(r, "rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", "rsub", 1, 0,
             rsub_rule);
  add_binary(r, "rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", "rsub", 1, 0,
             rsub_rule);

  DTypeRule common = [](const Binary& c, const Args&) { return c.common; };
  add_binary(r, "mul.Tensor(Tensor self, Tensor other) -> Tensor", "mul", 0, 1, common);
  add_binary(r, "mul.Scalar(Tensor self, Scalar other) -> Tensor", "mul", 0, 1, common);
  r.add_inplace("mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", "mul.Tensor");
  r.add_inplace("mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", "mul.Scalar");
}

void register_division(Registry& r) {
  // div: true division gives a floating result (int / int -> float32, as torch).
  auto div_rule = [](int mode_index) -> DTypeRule {
    return [mode_index](const Binary& c, const Args& args) {
      if (div_mode(args, mode_index) == BinaryOp::kDiv)
        return is_floating(c.common) ? c.common : DType::kFloat32;
      check_not_bool("div", c.common);
      return c.common;
    };
  };
  add_binary(r, "div.Tensor(Tensor self, Tensor other) -> Tensor", "div", 0, 1, div_rule(-1));
  add_binary(r, "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
             "div", 0, 1, div_rule(2));
  add_binary(r, "div.Scalar(Tensor self, Scalar other) -> Tensor", "div", 0, 1, div_rule(-1));
  add_binary(r, "div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor",
             "div", 0, 1, div_rule(2));
  r.add_inplace("div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", "div.Tensor");
  r.add_inplace(
      "div_.Tensor_mode(Tensor(a!) self, Tensor other, *, str? rounding_mode) -> Tensor(a!)",
      "div.Tensor_mode");
  r.add_inplace("div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", "div.Scalar");
  r.add_inplace(
      "div_.Scalar_mode(Tensor(a!) self, Scalar other, *, str? rounding_mode) -> Tensor(a!)",
      "div.Scalar_mode");
  // x.__rtruediv__(y) = y / x
  add_binary(r, "__rtruediv__(Tensor self, Tensor other) -> Tensor", "div", 1, 0, div_rule(-1));

  // floor_divide, remainder, fmod: integer or floating, never bool.
  auto int_rule = [](const char* op) -> DTypeRule {
    return [op](const Binary& c, const Args&) {
      check_not_bool(op, c.common);
      return c.common;
    };
  };
  const auto floor_r = int_rule("floor_divide");
  add_binary(r, "floor_divide(Tensor self, Tensor other) -> Tensor", "floor_divide", 0, 1, floor_r);
  add_binary(r, "floor_divide.Scalar(Tensor self, Scalar other) -> Tensor", "floor_divide", 0, 1,
             floor_r);
  r.add_inplace("floor_divide_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
                "floor_divide");
  r.add_inplace("floor_divide_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
                "floor_divide.Scalar");
  add_binary(r, "__rfloordiv__(Tensor self, Tensor other) -> Tensor", "floor_divide", 1, 0,
             floor_r);

  const auto rem_r = int_rule("remainder");
  add_binary(r, "remainder.Tensor(Tensor self, Tensor other) -> Tensor", "remainder", 0, 1, rem_r);
  add_binary(r, "remainder.Scalar(Tensor self, Scalar other) -> Tensor", "remainder", 0, 1, rem_r);
  add_binary(r, "remainder.Scalar_Tensor(Scalar self, Tensor other) -> Tensor", "remainder", 0, 1,
             rem_r);
  r.add_inplace("remainder_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
                "remainder.Tensor");
  r.add_inplace("remainder_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
                "remainder.Scalar");
  add_binary(r, "__rmod__(Tensor self, Tensor other) -> Tensor", "remainder", 1, 0, rem_r);

  const auto fmod_r = int_rule("fmod");
  add_binary(r, "fmod.Tensor(Tensor self, Tensor other) -> Tensor", "fmod", 0, 1, fmod_r);
  add_binary(r, "fmod.Scalar(Tensor self, Scalar other) -> Tensor", "fmod", 0, 1, fmod_r);
  r.add_inplace("fmod_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", "fmod.Tensor");
  r.add_inplace("fmod_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", "fmod.Scalar");
}

void register_pow(Registry& r) {
  DTypeRule rule = [](const Binary& c, const Args&) {
    if (c.a.is_tensor() && !c.b.is_tensor()) {
      const Scalar e = c.b.scalar;
      IP_CHECK(!(is_integral(c.a.tensor.dtype(), true) && !e.is_float() && e.to_int() < 0),
               kInvalidArgument, "[pow] integers to negative integer powers are not allowed (",
               dtype_name(c.a.tensor.dtype()), " ** ", e.to_int(), ")");
      if (e.to_double() == 0.0 || e.to_double() == 1.0) return c.common;  // fill / copy
    }
    check_not_bool("pow", c.common);
    return c.common;
  };
  add_binary(r, "pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor", "pow", 0, 1, rule);
  add_binary(r, "pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor", "pow", 0, 1, rule);
  add_binary(r, "pow.Scalar(Scalar self, Tensor exponent) -> Tensor", "pow", 0, 1, rule);
  r.add_inplace("pow_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)", "pow.Tensor_Scalar");
  r.add_inplace("pow_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)", "pow.Tensor_Tensor");
  // x.__rpow__(y) = y ** x
  add_binary(r, "__rpow__(Tensor self, Tensor other) -> Tensor", "pow", 1, 0, rule);

  // square(x) = x ** 2 (bool -> int64, as torch).
  r.add_out(
      "square(Tensor self) -> Tensor",
      [](const Args& args) {
        const Tensor& x = args[0].as_tensor("square");
        Operand a(x), two(Scalar(2));
        return std::vector<Tensor>{Tensor::meta(x.shape(), result_type({&a, &two}))};
      },
      nullptr);
  r.add_inplace("square_(Tensor(a!) self) -> Tensor(a!)", "square");
}

void register_min_max_bitwise(Registry& r) {
  DTypeRule common = [](const Binary& c, const Args&) { return c.common; };
  add_binary(r, "maximum(Tensor self, Tensor other) -> Tensor", "maximum", 0, 1, common);
  add_binary(r, "minimum(Tensor self, Tensor other) -> Tensor", "minimum", 0, 1, common);

  for (const char* op : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
    DTypeRule rule = [op](const Binary& c, const Args&) {
      IP_CHECK(is_integral(c.common, true), kDTypeMismatch, "[", op, "] not implemented for ",
               dtype_name(c.common), " (", operand_str(c.a), " and ", operand_str(c.b), ")");
      return c.common;
    };
    const std::string n = op;
    add_binary(r, n + ".Tensor(Tensor self, Tensor other) -> Tensor", op, 0, 1, rule);
    add_binary(r, n + ".Scalar(Tensor self, Scalar other) -> Tensor", op, 0, 1, rule);
    add_binary(r, n + ".Scalar_Tensor(Scalar self, Tensor other) -> Tensor", op, 0, 1, rule);
    r.add_inplace(n + "_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", n + ".Tensor");
    r.add_inplace(n + "_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", n + ".Scalar");
  }
}

void register_arith_aliases(Registry& r) {
  // operator-module and dunder spellings (FX records these at torch level), torch aliases
  struct Spellings {
    const char* name;
    std::initializer_list<const char*> spellings;
  };
  const Spellings kAliases[] = {
      {"add", {"__add__", "__radd__"}},
      {"add_", {"iadd", "__iadd__"}},
      {"sub", {"__sub__", "subtract"}},
      {"sub_", {"isub", "__isub__", "subtract_"}},
      {"rsub", {"__rsub__"}},
      {"mul", {"__mul__", "__rmul__", "multiply"}},
      {"mul_", {"imul", "__imul__", "multiply_"}},
      {"div", {"truediv", "__truediv__", "__div__", "divide", "true_divide"}},
      {"div_", {"itruediv", "__itruediv__", "__idiv__", "divide_", "true_divide_"}},
      {"__rtruediv__", {"__rdiv__"}},
      {"floor_divide", {"floordiv", "__floordiv__"}},
      {"floor_divide_", {"ifloordiv", "__ifloordiv__"}},
      {"remainder", {"mod", "__mod__"}},
      {"remainder_", {"imod", "__imod__"}},
      {"pow", {"__pow__"}},
      {"pow_", {"ipow", "__ipow__"}},
      {"bitwise_and", {"and_", "__and__", "__rand__"}},
      {"bitwise_and_", {"iand", "__iand__"}},
      {"bitwise_or", {"or_", "__or__", "__ror__"}},
      {"bitwise_or_", {"ior", "__ior__"}},
      {"bitwise_xor", {"xor", "__xor__", "__rxor__"}},
      {"bitwise_xor_", {"ixor", "__ixor__"}},
  };
  for (const Spellings& a : kAliases)
    for (const char* spelling : a.spellings) r.add_alias(spelling, a.name);
}

}  // namespace

void register_arith_ops(Registry& r) {
  register_add_sub_mul(r);
  register_division(r);
  register_pow(r);
  register_min_max_bitwise(r);
  register_arith_aliases(r);
  r.tag({"add", "sub", "mul", "div", "pow", "maximum", "minimum", "floor_divide", "remainder"},
        kPointwise);
}

}  // namespace inplace::elementwise
