// Unary ops: neg abs, float math (sqrt rsqrt exp log ... sigmoid), activations (relu gelu silu
// hardswish), rounding, bitwise_not and logical_not, each with its in-place form. The ops and
// their codes are the rows of kUnaryOps (ops/elementwise_codes.h).
#include <string>

#include "ops/elementwise_ops.h"

namespace inplace::elementwise {

namespace {

using Rule = UnaryRule;

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

// Declares name(self) and name_(self) computed through it (kernels: kUnaryOps' code).
void add_unary(Registry& r, const char* op, Rule rule) {
  const std::string n = op;
  r.add_out(
      n + "(Tensor self) -> Tensor",
      [op, rule](const Args& args) {
        const Tensor& x = args[0].as_tensor(op);
        return std::vector<Tensor>{Tensor::meta(x.shape(), unary_dtype(op, rule, x.dtype()))};
      },
      nullptr);
  r.add_inplace(n + "_(Tensor(a!) self) -> Tensor(a!)", n);
}

// torch.nn.functional.relu(input, inplace=False) and silu: FX records the `inplace` keyword.
// inplace=False is the functional op (with infer and n's kernels, so engines compute it
// allocation-free);
// eager honours inplace=True by writing the input like relu_. The schema cannot say the write
// is conditional, so a normalize pass must rewrite inplace=True calls to relu_ / silu_.
void add_functional_spelling(Registry& r, const char* op) {
  const std::string n = op;
  const OpDef* plain = r.find(n);
  IP_ASSERT(plain != nullptr, "'" + n + "' is registered before its nn.functional spelling");
  OpDef def;
  def.schema = Schema::parse(n + ".nn_functional(Tensor self, bool inplace=False) -> Tensor");
  def.infer = plain->infer;
  // Eagerly, the interpreter runs n or n_ by the inplace flag (an nn_functional overload).
  r.add(std::move(def));
}

}  // namespace

void register_unary_ops(Registry& r) {
  for (const UnaryDecl& d : kUnaryOps) add_unary(r, d.name, d.rule);

  r.add_out(
      "gelu(Tensor self, *, str approximate='none') -> Tensor",
      [](const Args& args) {
        const Tensor& x = args[0].as_tensor("gelu");
        gelu_kind(args[1]);
        return std::vector<Tensor>{
            Tensor::meta(x.shape(), unary_dtype("gelu", Rule::kFloatOnly, x.dtype()))};
      },
      nullptr);
  r.add_inplace("gelu_(Tensor(a!) self, *, str approximate='none') -> Tensor(a!)", "gelu");

  add_functional_spelling(r, "relu");
  add_functional_spelling(r, "silu");
  add_functional_spelling(r, "hardswish");

  const std::pair<const char*, const char*> kAliases[] = {
      {"__neg__", "neg"},        {"negative", "neg"},    {"negative_", "neg_"},
      {"__abs__", "abs"},        {"absolute", "abs"},    {"absolute_", "abs_"},
      {"invert", "bitwise_not"}, {"inv", "bitwise_not"}, {"__invert__", "bitwise_not"},
      {"fix", "trunc"},          {"fix_", "trunc_"},
  };
  for (const auto& [spelling, name] : kAliases) r.add_alias(spelling, name);
  for (const UnaryDecl& d : kUnaryOps)
    if (d.pointwise_tag) r.tag({d.name}, kPointwise);
  r.tag({"gelu"}, kPointwise);
}

}  // namespace inplace::elementwise
