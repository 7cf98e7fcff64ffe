// Reductions: sum, mean, amax/amin, max/min, argmax/argmin, var, softmax, log_softmax. Their
// arguments are decoded by ops/reduction_args.h, which the kernels read too.
#include "ops/reduction_args.h"
#include "ops/registry.h"

namespace inplace {

namespace {

using namespace reduction;

// ---------------------------------------------------------------- sum / mean

void register_sum(Registry& r) {
  auto infer = [](bool has_dim) {
    return [has_dim](const Args& a) {
      const SumArgs s = sum_args(a, has_dim, "sum");
      const DType dt = sum_dtype(s.self, opt_dtype(s.dtype, "sum"));
      return std::vector<Tensor>{
          Tensor::meta(plan_reduction(s.self, s.dim, s.keepdim, "sum").out_shape, dt)};
    };
  };
  r.add_out(
      "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) "
      "-> Tensor",
      infer(true), nullptr);
  r.add_out("sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", infer(false), nullptr);
}

void register_mean(Registry& r) {
  auto infer = [](bool has_dim) {
    return [has_dim](const Args& a) {
      const SumArgs s = sum_args(a, has_dim, "mean");
      const DType dt = mean_dtype(s.self, s.dtype);
      return std::vector<Tensor>{
          Tensor::meta(plan_reduction(s.self, s.dim, s.keepdim, "mean").out_shape, dt)};
    };
  };
  r.add_out(
      "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
      infer(true), nullptr);
  r.add_out("mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", infer(false), nullptr);
}

// ---------------------------------------------------------------- var

// var and std (its square root) share the kernel and the three overloads.
void register_var(Registry& r, const std::string& name) {
  auto infer = [name](VarForm form) {
    return [name, form](const Args& a) {
      const VarArgs v = var_args(a, form, name.c_str());
      return std::vector<Tensor>{Tensor::meta(
          plan_reduction(v.self, v.dim, v.keepdim, name.c_str()).out_shape, v.self.dtype())};
    };
  };
  // var.dim before var.default: torch.var(x, 1) means dim 1, not unbiased=1.
  r.add_out(
      name + ".dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor",
      infer(VarForm::kDim), nullptr);
  r.add_out(name +
                ".correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, "
                "bool keepdim=False) -> Tensor",
            infer(VarForm::kCorrection), nullptr);
  r.add_out(name + "(Tensor self, bool unbiased=True) -> Tensor", infer(VarForm::kDefault),
            nullptr);
}

// ---------------------------------------------------------------- max / min / arg

// amax/amin: values over a list of dims (default all).
void register_amax(Registry& r, const std::string& name) {
  r.add_out(
      name + "(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
      [name](const Args& a) {
        return std::vector<Tensor>{
            Tensor::meta(amax_plan(a, name.c_str()).out_shape, a[0].tensor.dtype())};
      },
      nullptr);
}

// max.default / max.dim (and min): max.other is the elementwise `maximum`, registered elsewhere.
void register_max(Registry& r, const std::string& name, bool is_max) {
  r.add_out(
      name + "(Tensor self) -> Tensor",
      [name](const Args& a) {
        const Tensor& x = a[0].as_tensor(name.c_str());
        return std::vector<Tensor>{
            Tensor::meta(max_all_plan(x, name.c_str()).out_shape, x.dtype())};
      },
      nullptr);
  r.add_out(
      name + ".dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
      [name](const Args& a) {
        Shape s = max_dim_plan(a, name.c_str()).out_shape;
        return std::vector<Tensor>{Tensor::meta(s, a[0].tensor.dtype()),
                                   Tensor::meta(s, DType::kInt64)};
      },
      nullptr);
  // torch.max(a, b) is elementwise maximum (NaN-propagating). Registered after max.dim so that
  // torch.max(x, 1) binds the reduction: an int never binds a Tensor parameter here.
  const OpDef* elementwise = r.find(is_max ? "maximum" : "minimum");
  IP_ASSERT(elementwise, "maximum/minimum must be registered before the reductions");
  OpDef other = *elementwise;
  other.schema = Schema::parse(name + ".other(Tensor self, Tensor other) -> Tensor");
  r.add(std::move(other));
}

// argmax/argmin: dim None flattens (keepdim then gives all-ones dims).
void register_argmax(Registry& r, const std::string& name) {
  r.add_out(
      name + "(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
      [name](const Args& a) {
        return std::vector<Tensor>{
            Tensor::meta(argmax_plan(a, name.c_str()).out_shape, DType::kInt64)};
      },
      nullptr);
}

// ---------------------------------------------------------------- softmax

void register_softmax(Registry& r, const std::string& name) {
  auto add = [&r, name](const std::string& schema, SoftmaxForm form) {
    r.add_out(
        schema,
        [name, form](const Args& a) {
          const SoftmaxArgs p = softmax_args(a, form, name.c_str());
          return std::vector<Tensor>{Tensor::meta(p.self.shape(), p.dtype)};
        },
        nullptr);
  };
  add(name + ".int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", SoftmaxForm::kInt);
  // torch.nn.functional.softmax(input, dim=None, _stacklevel=3, dtype=None), as FX records it.
  add(name +
          ".functional(Tensor input, int? dim=None, int _stacklevel=3, ScalarType? dtype=None)"
          " -> Tensor",
      SoftmaxForm::kFunctional);
  // aten._softmax(self, dim, half_to_float): half_to_float gives a float32 result.
  add("_" + name + "(Tensor self, int dim, bool half_to_float) -> Tensor", SoftmaxForm::kAten);
}

}  // namespace

void register_reduction_ops(Registry& r) {
  register_sum(r);
  register_mean(r);
  register_var(r, "var");
  register_var(r, "std");
  register_amax(r, "amax");
  register_amax(r, "amin");
  register_max(r, "max", true);
  register_max(r, "min", false);
  register_argmax(r, "argmax");
  register_argmax(r, "argmin");
  register_softmax(r, "softmax");
  register_softmax(r, "log_softmax");
}

}  // namespace inplace
