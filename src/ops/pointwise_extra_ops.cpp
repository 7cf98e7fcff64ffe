// addcmul / addcdiv / lerp (state updates: optimizer-style moving averages, EMA caches) and the
// clamping activations hardtanh / leaky_relu, each with its in-place form and, for the
// activations, the torch.nn.functional spelling with `inplace=`. Their operands are tensors and
// numbers read as the schema binds them, so no decoding is shared with the kernels.
#include <string>

#include "ops/registry.h"

namespace inplace {

namespace {

// The broadcast shape and promoted floating dtype of the tensor operands; errors name `op`.
Tensor result_meta(const char* op, std::initializer_list<const Tensor*> ts) {
  Shape shape;
  ResultType rt;
  bool first = true;
  for (const Tensor* t : ts) {
    shape = first ? t->shape() : broadcast_shapes(shape, t->shape(), op);
    first = false;
    rt.add_tensor(t->dtype(), t->dim());
  }
  DType dt = rt.result();
  IP_CHECK(dt == DType::kFloat32 || dt == DType::kFloat64, kDTypeMismatch, "[", op,
           "] not implemented for ", dtype_name(dt), " (float32 and float64 are)");
  return Tensor::meta(shape, dt);
}

void add_addc(Registry& r, const char* op) {
  const std::string n = op;
  r.add_out(
      n + "(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
      [op](const Args& a) {
        return std::vector<Tensor>{
            result_meta(op, {&a[0].as_tensor(op), &a[1].as_tensor(op), &a[2].as_tensor(op)})};
      },
      nullptr);
  r.add_inplace(n + "_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> "
                    "Tensor(a!)",
                n);
}

void add_lerp(Registry& r) {
  r.add_out(
      "lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor",
      [](const Args& a) {
        return std::vector<Tensor>{
            result_meta("lerp", {&a[0].as_tensor("lerp"), &a[1].as_tensor("lerp")})};
      },
      nullptr);
  r.add_out(
      "lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor",
      [](const Args& a) {
        return std::vector<Tensor>{result_meta(
            "lerp", {&a[0].as_tensor("lerp"), &a[1].as_tensor("lerp"), &a[2].as_tensor("lerp")})};
      },
      nullptr);
  r.add_inplace("lerp_.Scalar(Tensor(a!) self, Tensor end, Scalar weight) -> Tensor(a!)",
                "lerp.Scalar");
  r.add_inplace("lerp_.Tensor(Tensor(a!) self, Tensor end, Tensor weight) -> Tensor(a!)",
                "lerp.Tensor");
}

// name(self, <params>) -> Tensor, name_ in place, and name.nn_functional(..., inplace=False)
// (F.hardtanh / F.leaky_relu as FX records them; normalize rewrites inplace=True to name_).
void add_activation(Registry& r, const std::string& name, const std::string& params) {
  InferFn infer = [name](const Args& a) {
    const Tensor& x = a[0].as_tensor(name.c_str());
    return std::vector<Tensor>{result_meta(name.c_str(), {&x})};
  };
  r.add_out(name + "(Tensor self, " + params + ") -> Tensor", infer, nullptr);
  r.add_inplace(name + "_(Tensor(a!) self, " + params + ") -> Tensor(a!)", name);
  OpDef def;
  def.schema = Schema::parse(name + ".nn_functional(Tensor self, " + params +
                             ", bool inplace=False) -> Tensor");
  def.infer = infer;
  // Eagerly, the interpreter runs name or name_ by the inplace flag (an nn_functional overload).
  r.add(std::move(def));
}

}  // namespace

void register_pointwise_extra_ops(Registry& r) {
  add_addc(r, "addcmul");
  add_addc(r, "addcdiv");
  add_lerp(r);
  add_activation(r, "hardtanh", "Scalar min_val=-1, Scalar max_val=1");
  add_activation(r, "leaky_relu", "Scalar negative_slope=0.01");
  r.tag({"addcmul", "addcdiv", "lerp", "hardtanh", "leaky_relu"}, kPointwise);
}

}  // namespace inplace
