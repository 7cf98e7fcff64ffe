// gather and the scatter family: scatter (src / value / reduce / value_reduce), scatter_add,
// scatter_reduce.two, each with its in-place form writing self directly (a cpu eager kernel).
// Their arguments and shape rules: ops/scatter_args.h.
#include "ops/indexing_ops.h"
#include "ops/scatter_args.h"

namespace inplace::indexing {

namespace {

void register_form(Registry& r, ScatterForm form, const std::string& name,
                   const std::string& overload, const std::string& params) {
  const std::string ov = overload.empty() ? "" : "." + overload;
  const std::string fn = name + ov;
  std::string op = name;
  r.add_out(
      fn + "(Tensor self, int dim, Tensor index, " + params + ") -> Tensor",
      [form, op](const Args& a) {
        ScatterCall c = read_scatter_call(a, form, op.c_str());
        return std::vector<Tensor>{Tensor::meta(c.self.shape(), c.self.dtype())};
      },
      nullptr);
  add_mutating(
      r, name + "_" + ov + "(Tensor(a!) self, int dim, Tensor index, " + params + ") -> Tensor(a!)",
      fn, nullptr);
}

}  // namespace

void register_scatter_ops(Registry& r) {
  r.add_out(
      "gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor",
      [](const Args& a) {
        const Tensor self = tensor_arg(a[0], "gather");
        Shape shape = check_gather(self, gather_dim(self, a), tensor_arg(a[2], "gather"), "gather");
        return std::vector<Tensor>{Tensor::meta(shape, self.dtype())};
      },
      nullptr);
  // .src first: a tensor src must not bind .value (Scalar also accepts 1-element tensors).
  register_form(r, ScatterForm::kSrc, "scatter", "src", "Tensor src");
  register_form(r, ScatterForm::kValue, "scatter", "value", "Scalar value");
  register_form(r, ScatterForm::kReduce, "scatter", "reduce", "Tensor src, *, str reduce");
  register_form(r, ScatterForm::kValueReduce, "scatter", "value_reduce",
                "Scalar value, *, str reduce");
  register_form(r, ScatterForm::kAdd, "scatter_add", "", "Tensor src");
  register_form(r, ScatterForm::kReduceTwo, "scatter_reduce", "two",
                "Tensor src, str reduce, *, bool include_self=True");
  r.tag({"scatter", "scatter_add", "scatter_reduce"}, kScatterLike);
}

}  // namespace inplace::indexing
