// Unary ops: neg abs, float math (sqrt rsqrt exp log ... sigmoid), activations (relu gelu silu),
// rounding, bitwise_not and logical_not, each with its in-place form.
#include <string>

#include "ops/elementwise_ops.h"

namespace inplace::elementwise {

namespace {

using cpu::UnaryOp;

// How a unary op's result dtype follows its input's.
enum class Rule : uint8_t {
  kNoBool,     // same dtype; bool is an error (neg, abs, relu)
  kFloat,      // integers and bool promote to float32 (sqrt, exp, sigmoid, ...)
  kFloatOnly,  // floating inputs only (gelu, silu)
  kRounding,   // same dtype, integers pass through, bool is an error
  kIntegral,   // integers and bool only (bitwise_not)
  kToBool,     // bool result (logical_not)
};

DType unary_dtype(const char* op, Rule rule, DType in) {
  switch (rule) {
    case Rule::kNoBool:
      IP_CHECK(in != DType::kBool || std::string(op) != "neg", kDTypeMismatch, "[", op,
               "] negation, the `-` operator, on a bool tensor is not supported. If you are "
               "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
      IP_CHECK(in != DType::kBool, kDTypeMismatch, "[", op, "] boolean inputs not supported");
      return in;
    case Rule::kFloat:
      return is_floating(in) ? in : DType::kFloat32;
    case Rule::kFloatOnly:
      IP_CHECK(is_floating(in), kDTypeMismatch, "[", op, "] not implemented for ", dtype_name(in),
               "; it expects a floating point tensor");
      return in;
    case Rule::kRounding:
      IP_CHECK(in != DType::kBool, kDTypeMismatch, "[", op, "] not implemented for bool");
      return in;
    case Rule::kIntegral:
      IP_CHECK(is_integral(in, true), kDTypeMismatch, "[", op, "] not implemented for ",
               dtype_name(in), "; it expects an integer or bool tensor");
      return in;
    case Rule::kToBool:
      return DType::kBool;
  }
  return in;
}

// Registers name(self) and, when torch has one, name_(self) computed through it.
void add_unary(Registry& r, const char* op, UnaryOp kind, Rule rule, bool inplace = true) {
  const std::string n = op;
  r.add_out(
      n + "(Tensor self) -> Tensor",
      [op, rule](const Args& args) {
        const Tensor& x = args[0].as_tensor(op);
        return std::vector<Tensor>{Tensor::meta(x.shape(), unary_dtype(op, rule, x.dtype()))};
      },
      [op, kind](const Args& args, const std::vector<Tensor>& out) {
        cpu::unary(kind, out[0], args[0].as_tensor(op));
      });
  if (inplace) r.add_inplace(n + "_(Tensor(a!) self) -> Tensor(a!)", n);
}

UnaryOp gelu_kind(const Value& approximate) {
  const std::string& a = approximate.as_string("gelu");
  if (a == "none") return UnaryOp::kGelu;
  if (a == "tanh") return UnaryOp::kGeluTanh;
  IP_FAIL(kInvalidArgument, "[gelu] approximate must be 'none' or 'tanh', got '", a, "'");
}

// torch.nn.functional.relu(input, inplace=False) and silu: FX records the `inplace` keyword.
// inplace=False is the functional op (with infer/out, so engines compute it allocation-free);
// eager honours inplace=True by writing the input like relu_. The schema cannot say the write
// is conditional, so a normalize pass must rewrite inplace=True calls to relu_ / silu_.
void add_functional_spelling(Registry& r, const char* op) {
  const std::string n = op;
  const OpDef* plain = r.find(n);
  IP_ASSERT(plain != nullptr, "'" + n + "' is registered before its nn.functional spelling");
  OpDef def;
  def.schema = Schema::parse(n + ".nn_functional(Tensor self, bool inplace=False) -> Tensor");
  def.infer = plain->infer;
  def.out = plain->out;
  const Registry* reg = &r;
  def.eager = [n, reg](const Args& args) {
    const OpDef* target = reg->find(args[1].as_bool(n.c_str()) ? n + "_" : n);
    IP_ASSERT(target != nullptr, "'" + n + "' and '" + n + "_' are registered");
    return target->eager(Args{args[0]});
  };
  r.add(std::move(def));
}

}  // namespace

void register_unary_ops(Registry& r) {
  add_unary(r, "neg", UnaryOp::kNeg, Rule::kNoBool);
  add_unary(r, "abs", UnaryOp::kAbs, Rule::kNoBool);
  add_unary(r, "relu", UnaryOp::kRelu, Rule::kNoBool);
  add_unary(r, "sqrt", UnaryOp::kSqrt, Rule::kFloat);
  add_unary(r, "rsqrt", UnaryOp::kRsqrt, Rule::kFloat);
  add_unary(r, "exp", UnaryOp::kExp, Rule::kFloat);
  add_unary(r, "log", UnaryOp::kLog, Rule::kFloat);
  add_unary(r, "log2", UnaryOp::kLog2, Rule::kFloat);
  add_unary(r, "log1p", UnaryOp::kLog1p, Rule::kFloat);
  add_unary(r, "expm1", UnaryOp::kExpm1, Rule::kFloat);
  add_unary(r, "sin", UnaryOp::kSin, Rule::kFloat);
  add_unary(r, "cos", UnaryOp::kCos, Rule::kFloat);
  add_unary(r, "tan", UnaryOp::kTan, Rule::kFloat);
  add_unary(r, "tanh", UnaryOp::kTanh, Rule::kFloat);
  add_unary(r, "erf", UnaryOp::kErf, Rule::kFloat);
  add_unary(r, "sigmoid", UnaryOp::kSigmoid, Rule::kFloat);
  add_unary(r, "reciprocal", UnaryOp::kReciprocal, Rule::kFloat);
  add_unary(r, "silu", UnaryOp::kSilu, Rule::kFloatOnly);
  add_unary(r, "floor", UnaryOp::kFloor, Rule::kRounding);
  add_unary(r, "ceil", UnaryOp::kCeil, Rule::kRounding);
  add_unary(r, "round", UnaryOp::kRound, Rule::kRounding);
  add_unary(r, "trunc", UnaryOp::kTrunc, Rule::kRounding);
  add_unary(r, "bitwise_not", UnaryOp::kBitwiseNot, Rule::kIntegral);
  add_unary(r, "logical_not", UnaryOp::kLogicalNot, Rule::kToBool);

  r.add_out(
      "gelu(Tensor self, *, str approximate='none') -> Tensor",
      [](const Args& args) {
        const Tensor& x = args[0].as_tensor("gelu");
        gelu_kind(args[1]);
        return std::vector<Tensor>{
            Tensor::meta(x.shape(), unary_dtype("gelu", Rule::kFloatOnly, x.dtype()))};
      },
      [](const Args& args, const std::vector<Tensor>& out) {
        cpu::unary(gelu_kind(args[1]), out[0], args[0].as_tensor("gelu"));
      });
  r.add_inplace("gelu_(Tensor(a!) self, *, str approximate='none') -> Tensor(a!)", "gelu");

  add_functional_spelling(r, "relu");
  add_functional_spelling(r, "silu");

  const std::pair<const char*, const char*> kAliases[] = {
      {"__neg__", "neg"},        {"negative", "neg"},    {"negative_", "neg_"},
      {"__abs__", "abs"},        {"absolute", "abs"},    {"absolute_", "abs_"},
      {"invert", "bitwise_not"}, {"inv", "bitwise_not"}, {"__invert__", "bitwise_not"},
      {"fix", "trunc"},          {"fix_", "trunc_"},
  };
  for (const auto& [spelling, name] : kAliases) r.add_alias(spelling, name);
  r.tag({"neg", "abs", "sqrt", "rsqrt", "exp", "log", "sin", "cos", "tanh", "sigmoid", "relu",
         "gelu", "silu", "logical_not"},
        kPointwise);
}

}  // namespace inplace::elementwise
