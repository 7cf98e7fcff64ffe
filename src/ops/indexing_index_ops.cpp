// aten.index / index_put(_) and the one-dim index ops built on the same kernel: index_select,
// index_copy(_), index_add(_), index_fill(_). Their shape rules: ops/index_ops_args.h; the
// in-place forms write self directly (a cpu eager kernel).
#include "ops/index_ops_args.h"
#include "ops/indexing_ops.h"

namespace inplace::indexing {

namespace {

std::vector<Tensor> index_infer(const Args& a, const char* op) {
  const Tensor& self = a[0].as_tensor(op);
  return {Tensor::meta(plan_index(self, a[1], op).result_shape, self.dtype())};
}

std::vector<Tensor> index_put_infer(const Args& a, const char* op) {
  const Tensor& self = a[0].as_tensor(op);
  const Tensor values = tensor_arg(a[2], op, self.dtype());
  // A meta mask leaves the indexed shape unknown until run time; check what we can.
  bool meta_mask = false;
  for (const Tensor& t : index_list(a[1], op))
    meta_mask |= t.defined() && t.is_meta() && is_mask_dtype(t.dtype());
  if (!meta_mask) check_put(plan_index(self, a[1], op), values, op);
  return {Tensor::meta(self.shape(), self.dtype())};
}

void register_dim_op(Registry& r, const char* name, DimOp kind, const std::string& params) {
  const std::string n = name;
  r.add_out(
      n + "(Tensor self, int dim, Tensor index, " + params + ") -> Tensor",
      [kind, name](const Args& a) { return dim_infer(a, kind, name); }, nullptr);
}

}  // namespace

void register_index_ops(Registry& r) {
  for (const char* name : {"index.Tensor", "_unsafe_index.Tensor"}) {
    std::string op = std::string(name).substr(0, std::string(name).find('.'));
    r.add_out(
        std::string(name) + "(Tensor self, Tensor?[] indices) -> Tensor",
        [op](const Args& a) { return index_infer(a, op.c_str()); }, nullptr);
  }
  for (const char* name : {"index_put", "_unsafe_index_put"}) {
    std::string op = name;
    r.add_out(
        op + "(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
        [op](const Args& a) { return index_put_infer(a, op.c_str()); }, nullptr);
  }
  add_mutating(r,
               "index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool "
               "accumulate=False) -> Tensor(a!)",
               "index_put", nullptr);
  add_mutating(r,
               "_index_put_impl_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool "
               "accumulate=False, bool unsafe=False) -> Tensor(a!)",
               "index_put", nullptr);

  r.add_out(
      "index_select(Tensor self, int dim, Tensor index) -> Tensor",
      [](const Args& a) {
        const Tensor self = tensor_arg(a[0], "index_select");
        const AdvancedIndex ai = index_select_plan(a);
        Shape shape = self.dim() == 0 ? Shape{} : ai.result_shape;
        return std::vector<Tensor>{Tensor::meta(shape, self.dtype())};
      },
      nullptr);

  register_dim_op(r, "index_copy", DimOp::kCopy, "Tensor source");
  register_dim_op(r, "index_add", DimOp::kAdd, "Tensor source, *, Scalar alpha=1");
  for (const char* schema :
       {"index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor",
        "index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor"})
    r.add_out(
        schema, [](const Args& a) { return dim_infer(a, DimOp::kFill, "index_fill"); }, nullptr);

  add_mutating(r,
               "index_copy_(Tensor(a!) self, int dim, Tensor index, Tensor source) -> Tensor(a!)",
               "index_copy", nullptr);
  add_mutating(r,
               "index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, Scalar "
               "alpha=1) -> Tensor(a!)",
               "index_add", nullptr);
  add_mutating(r,
               "index_fill_.int_Scalar(Tensor(a!) self, int dim, Tensor index, Scalar value) -> "
               "Tensor(a!)",
               "index_fill.int_Scalar", nullptr);
  add_mutating(r,
               "index_fill_.int_Tensor(Tensor(a!) self, int dim, Tensor index, Tensor value) -> "
               "Tensor(a!)",
               "index_fill.int_Tensor", nullptr);
  r.tag({"index_put", "index_copy", "index_add", "index_fill"}, kScatterLike);
}

}  // namespace inplace::indexing
