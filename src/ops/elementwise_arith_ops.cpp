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

using cpu::BinaryOp;

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
using BinaryKernel = std::function<void(const Binary&, const Args&, const Tensor& out)>;

// Registers a broadcasting binary op over args[ia] (left) and args[ib] (right).
void add_binary(Registry& r, const std::string& schema, const char* op, int ia, int ib,
                DTypeRule rule, BinaryKernel kernel) {
  r.add_out(
      schema,
      [=](const Args& args) {
        Binary c = bind_binary(args, op, ia, ib);
        return std::vector<Tensor>{Tensor::meta(c.shape, rule(c, args))};
      },
      [=](const Args& args, const std::vector<Tensor>& out) {
        kernel(bind_binary(args, op, ia, ib), args, out[0]);
      });
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

// rounding_mode: -1 for none, else the argument index.
BinaryOp div_mode(const Args& args, int index) {
  if (index < 0 || args[index].is_none()) return BinaryOp::kDiv;
  const std::string& mode = args[index].as_string("div");
  if (mode == "trunc") return BinaryOp::kDivTrunc;
  if (mode == "floor") return BinaryOp::kDivFloor;
  IP_FAIL(kInvalidArgument,
          "[div] expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", mode,
          "'");
}

void register_add_sub_mul(Registry& r) {
  // add / sub / rsub share a kernel; alpha is argument 2 in every overload.
  auto alpha_op = [](const char* op, BinaryOp kind, bool sub) {
    DTypeRule rule = [op, sub](const Binary& c, const Args& args) {
      if (sub) check_sub(op, c);
      return check_alpha(op, c, args[2].as_scalar(op));
    };
    BinaryKernel kernel = [op, kind](const Binary& c, const Args& args, const Tensor& out) {
      cpu::binary(kind, out, c.a, c.b, args[2].as_scalar(op), op);
    };
    return std::make_pair(rule, kernel);
  };
  auto [add_rule, add_kernel] = alpha_op("add", BinaryOp::kAdd, false);
  add_binary(r, "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", "add", 0, 1,
             add_rule, add_kernel);
  add_binary(r, "add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", "add", 0, 1,
             add_rule, add_kernel);
  r.add_inplace("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
                "add.Tensor");
  r.add_inplace("add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
                "add.Scalar");

  auto [sub_rule, sub_kernel] = alpha_op("sub", BinaryOp::kSub, true);
  add_binary(r, "sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", "sub", 0, 1,
             sub_rule, sub_kernel);
  add_binary(r, "sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", "sub", 0, 1,
             sub_rule, sub_kernel);
  r.add_inplace("sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
                "sub.Tensor");
  r.add_inplace("sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
                "sub.Scalar");

  // rsub(self, other, alpha) = other - alpha * self
  auto [rsub_rule, rsub_kernel] = alpha_op("rsub", BinaryOp::kSub, true);
  add_binary(r, "rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", "rsub", 1, 0,
             rsub_rule, rsub_kernel);
  add_binary(r, "rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", "rsub", 1, 0,
             rsub_rule, rsub_kernel);

  DTypeRule common = [](const Binary& c, const Args&) { return c.common; };
  BinaryKernel mul = [](const Binary& c, const Args&, const Tensor& out) {
    cpu::binary(BinaryOp::kMul, out, c.a, c.b, Scalar(1), "mul");
  };
  add_binary(r, "mul.Tensor(Tensor self, Tensor other) -> Tensor", "mul", 0, 1, common, mul);
  add_binary(r, "mul.Scalar(Tensor self, Scalar other) -> Tensor", "mul", 0, 1, common, mul);
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
  auto div_kernel = [](int mode_index) -> BinaryKernel {
    return [mode_index](const Binary& c, const Args& args, const Tensor& out) {
      cpu::binary(div_mode(args, mode_index), out, c.a, c.b, Scalar(1), "div");
    };
  };
  add_binary(r, "div.Tensor(Tensor self, Tensor other) -> Tensor", "div", 0, 1, div_rule(-1),
             div_kernel(-1));
  add_binary(r, "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
             "div", 0, 1, div_rule(2), div_kernel(2));
  add_binary(r, "div.Scalar(Tensor self, Scalar other) -> Tensor", "div", 0, 1, div_rule(-1),
             div_kernel(-1));
  add_binary(r, "div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor",
             "div", 0, 1, div_rule(2), div_kernel(2));
  r.add_inplace("div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", "div.Tensor");
  r.add_inplace(
      "div_.Tensor_mode(Tensor(a!) self, Tensor other, *, str? rounding_mode) -> Tensor(a!)",
      "div.Tensor_mode");
  r.add_inplace("div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", "div.Scalar");
  r.add_inplace(
      "div_.Scalar_mode(Tensor(a!) self, Scalar other, *, str? rounding_mode) -> Tensor(a!)",
      "div.Scalar_mode");
  // x.__rtruediv__(y) = y / x
  add_binary(r, "__rtruediv__(Tensor self, Tensor other) -> Tensor", "div", 1, 0, div_rule(-1),
             div_kernel(-1));

  // floor_divide, remainder, fmod: integer or floating, never bool.
  auto int_rule = [](const char* op) -> DTypeRule {
    return [op](const Binary& c, const Args&) {
      check_not_bool(op, c.common);
      return c.common;
    };
  };
  auto kernel = [](const char* op, BinaryOp kind) -> BinaryKernel {
    return [op, kind](const Binary& c, const Args&, const Tensor& out) {
      cpu::binary(kind, out, c.a, c.b, Scalar(1), op);
    };
  };
  const auto floor_k = kernel("floor_divide", BinaryOp::kDivFloor);
  const auto floor_r = int_rule("floor_divide");
  add_binary(r, "floor_divide(Tensor self, Tensor other) -> Tensor", "floor_divide", 0, 1, floor_r,
             floor_k);
  add_binary(r, "floor_divide.Scalar(Tensor self, Scalar other) -> Tensor", "floor_divide", 0, 1,
             floor_r, floor_k);
  r.add_inplace("floor_divide_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
                "floor_divide");
  r.add_inplace("floor_divide_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
                "floor_divide.Scalar");
  add_binary(r, "__rfloordiv__(Tensor self, Tensor other) -> Tensor", "floor_divide", 1, 0, floor_r,
             floor_k);

  const auto rem_k = kernel("remainder", BinaryOp::kRemainder);
  const auto rem_r = int_rule("remainder");
  add_binary(r, "remainder.Tensor(Tensor self, Tensor other) -> Tensor", "remainder", 0, 1, rem_r,
             rem_k);
  add_binary(r, "remainder.Scalar(Tensor self, Scalar other) -> Tensor", "remainder", 0, 1, rem_r,
             rem_k);
  add_binary(r, "remainder.Scalar_Tensor(Scalar self, Tensor other) -> Tensor", "remainder", 0, 1,
             rem_r, rem_k);
  r.add_inplace("remainder_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
                "remainder.Tensor");
  r.add_inplace("remainder_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
                "remainder.Scalar");
  add_binary(r, "__rmod__(Tensor self, Tensor other) -> Tensor", "remainder", 1, 0, rem_r, rem_k);

  const auto fmod_k = kernel("fmod", BinaryOp::kFmod);
  const auto fmod_r = int_rule("fmod");
  add_binary(r, "fmod.Tensor(Tensor self, Tensor other) -> Tensor", "fmod", 0, 1, fmod_r, fmod_k);
  add_binary(r, "fmod.Scalar(Tensor self, Scalar other) -> Tensor", "fmod", 0, 1, fmod_r, fmod_k);
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
  BinaryKernel kernel = [](const Binary& c, const Args&, const Tensor& out) {
    if (c.a.is_tensor() && !c.b.is_tensor()) return cpu::pow_scalar(out, c.a.tensor, c.b.scalar);
    if (!c.a.is_tensor() && c.a.scalar.to_double() == 1.0) return cpu::fill(out, Scalar(1));
    cpu::binary(BinaryOp::kPow, out, c.a, c.b, Scalar(1), "pow");
  };
  add_binary(r, "pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor", "pow", 0, 1, rule,
             kernel);
  add_binary(r, "pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor", "pow", 0, 1, rule,
             kernel);
  add_binary(r, "pow.Scalar(Scalar self, Tensor exponent) -> Tensor", "pow", 0, 1, rule, kernel);
  r.add_inplace("pow_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)", "pow.Tensor_Scalar");
  r.add_inplace("pow_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)", "pow.Tensor_Tensor");
  // x.__rpow__(y) = y ** x
  add_binary(r, "__rpow__(Tensor self, Tensor other) -> Tensor", "pow", 1, 0, rule, kernel);

  // square(x) = x ** 2 (bool -> int64, as torch).
  r.add_out(
      "square(Tensor self) -> Tensor",
      [](const Args& args) {
        const Tensor& x = args[0].as_tensor("square");
        Operand a(x), two(Scalar(2));
        return std::vector<Tensor>{Tensor::meta(x.shape(), result_type({&a, &two}))};
      },
      [](const Args& args, const std::vector<Tensor>& out) {
        cpu::pow_scalar(out[0], args[0].as_tensor("square"), Scalar(2));
      });
  r.add_inplace("square_(Tensor(a!) self) -> Tensor(a!)", "square");
}

void register_min_max_bitwise(Registry& r) {
  auto kernel = [](const char* op, BinaryOp kind) -> BinaryKernel {
    return [op, kind](const Binary& c, const Args&, const Tensor& out) {
      cpu::binary(kind, out, c.a, c.b, Scalar(1), op);
    };
  };
  DTypeRule common = [](const Binary& c, const Args&) { return c.common; };
  add_binary(r, "maximum(Tensor self, Tensor other) -> Tensor", "maximum", 0, 1, common,
             kernel("maximum", BinaryOp::kMaximum));
  add_binary(r, "minimum(Tensor self, Tensor other) -> Tensor", "minimum", 0, 1, common,
             kernel("minimum", BinaryOp::kMinimum));

  struct Bitwise {
    const char* name;
    BinaryOp kind;
  };
  for (const Bitwise& b :
       {Bitwise{"bitwise_and", BinaryOp::kBitwiseAnd}, Bitwise{"bitwise_or", BinaryOp::kBitwiseOr},
        Bitwise{"bitwise_xor", BinaryOp::kBitwiseXor}}) {
    const char* op = b.name;
    DTypeRule rule = [op](const Binary& c, const Args&) {
      IP_CHECK(is_integral(c.common, true), kDTypeMismatch, "[", op, "] not implemented for ",
               dtype_name(c.common), " (", operand_str(c.a), " and ", operand_str(c.b), ")");
      return c.common;
    };
    const std::string n = op;
    add_binary(r, n + ".Tensor(Tensor self, Tensor other) -> Tensor", op, 0, 1, rule,
               kernel(op, b.kind));
    add_binary(r, n + ".Scalar(Tensor self, Scalar other) -> Tensor", op, 0, 1, rule,
               kernel(op, b.kind));
    add_binary(r, n + ".Scalar_Tensor(Scalar self, Tensor other) -> Tensor", op, 0, 1, rule,
               kernel(op, b.kind));
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
