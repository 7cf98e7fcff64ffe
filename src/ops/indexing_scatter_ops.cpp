// gather and the scatter family: scatter (src / value / reduce / value_reduce), scatter_add,
// scatter_reduce.two, each with its in-place form writing self directly.
#include "kernels/cpu/index_common.h"
#include "kernels/cpu/scatter_kernels.h"
#include "ops/indexing_ops.h"

namespace inplace::indexing {

namespace {

using cpu::ScatterReduce;

// Which scatter an overload is; all take (self, dim, index, src-or-value, ...).
enum class Form { kSrc, kValue, kReduce, kValueReduce, kAdd, kReduceTwo };

struct ScatterCall {
  Tensor self, index, src;  // src undefined: scalar `value`
  int64_t dim = 0;
  Scalar value;
  ScatterReduce reduce = ScatterReduce::kNone;
  bool include_self = true;
};

ScatterCall read_call(const Args& a, Form form, const char* op) {
  ScatterCall c;
  c.self = tensor_arg(a[0], op);
  c.dim = wrap_dim(a[1].as_int(op), std::max<int64_t>(c.self.dim(), 1), op);
  c.index = tensor_arg(a[2], op);
  // A Python number passed as src is a value (torch.scatter(x, 0, i, 1.5) binds .value).
  if (form == Form::kValue || form == Form::kValueReduce || a[3].is_number())
    c.value = a[3].as_scalar(op);
  else
    c.src = a[3].as_tensor(op);
  if (form == Form::kReduce || form == Form::kValueReduce)
    c.reduce = cpu::parse_scatter_reduce(a[4].as_string(op), false, op);
  if (form == Form::kAdd) c.reduce = ScatterReduce::kSum;
  if (form == Form::kReduceTwo) {
    c.reduce = cpu::parse_scatter_reduce(a[4].as_string(op), true, op);
    c.include_self = a[5].as_bool(op);
    IP_CHECK(c.src.defined(), kInvalidArgument, "[", op, "] src must be a tensor");
  }
  cpu::check_scatter(c.self, c.dim, c.index, c.src, op);
  return c;
}

void run(const Tensor& target, const ScatterCall& c, Form form, const char* op) {
  if (form == Form::kReduceTwo)
    cpu::scatter_reduce_two(target, c.dim, c.index, c.src, c.reduce, c.include_self, op);
  else
    cpu::scatter(target, c.dim, c.index, c.src, c.value, c.reduce, op);
}

void register_form(Registry& r, Form form, const std::string& name, const std::string& overload,
                   const std::string& params) {
  const std::string ov = overload.empty() ? "" : "." + overload;
  const std::string fn = name + ov;
  std::string op = name;
  r.add_out(
      fn + "(Tensor self, int dim, Tensor index, " + params + ") -> Tensor",
      [form, op](const Args& a) {
        ScatterCall c = read_call(a, form, op.c_str());
        return std::vector<Tensor>{Tensor::meta(c.self.shape(), c.self.dtype())};
      },
      [form, op](const Args& a, const std::vector<Tensor>& out) {
        ScatterCall c = read_call(a, form, op.c_str());
        cpu::copy_region(out[0], c.self);
        run(out[0], c, form, op.c_str());
      });
  std::string op_ = name + "_";
  add_mutating(
      r, name + "_" + ov + "(Tensor(a!) self, int dim, Tensor index, " + params + ") -> Tensor(a!)",
      fn, [form, op_](const Args& a) {
        ScatterCall c = read_call(a, form, op_.c_str());
        run(a[0].as_tensor(op_.c_str()), c, form, op_.c_str());
        return a[0];
      });
}

}  // namespace

void register_scatter_ops(Registry& r) {
  r.add_out(
      "gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor",
      [](const Args& a) {
        const Tensor self = tensor_arg(a[0], "gather");
        int64_t dim = wrap_dim(a[1].as_int("gather"), std::max<int64_t>(self.dim(), 1), "gather");
        Shape shape = cpu::check_gather(self, dim, tensor_arg(a[2], "gather"), "gather");
        return std::vector<Tensor>{Tensor::meta(shape, self.dtype())};
      },
      [](const Args& a, const std::vector<Tensor>& out) {
        const Tensor self = tensor_arg(a[0], "gather");
        int64_t dim = wrap_dim(a[1].as_int("gather"), std::max<int64_t>(self.dim(), 1), "gather");
        cpu::gather(self, dim, tensor_arg(a[2], "gather"), out[0], "gather");
      });
  // .src first: a tensor src must not bind .value (Scalar also accepts 1-element tensors).
  register_form(r, Form::kSrc, "scatter", "src", "Tensor src");
  register_form(r, Form::kValue, "scatter", "value", "Scalar value");
  register_form(r, Form::kReduce, "scatter", "reduce", "Tensor src, *, str reduce");
  register_form(r, Form::kValueReduce, "scatter", "value_reduce", "Scalar value, *, str reduce");
  register_form(r, Form::kAdd, "scatter_add", "", "Tensor src");
  register_form(r, Form::kReduceTwo, "scatter_reduce", "two",
                "Tensor src, str reduce, *, bool include_self=True");
  r.tag({"scatter", "scatter_add", "scatter_reduce"}, kScatterLike);
}

}  // namespace inplace::indexing
