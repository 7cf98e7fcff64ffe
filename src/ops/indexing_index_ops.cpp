// aten.index / index_put(_) and the one-dim index ops built on the same kernel: index_select,
// index_copy(_), index_add(_), index_fill(_).
#include "kernels/cpu/index_common.h"
#include "kernels/cpu/index_kernels.h"
#include "ops/indexing_ops.h"

namespace inplace::indexing {

namespace {

using cpu::AdvancedIndex;

AdvancedIndex plan_index(const Tensor& self, const Value& indices, const char* op) {
  std::vector<Tensor> idx = cpu::expand_index_masks(self.shape(), index_list(indices, op), op);
  return cpu::plan_advanced_index(self.shape(), idx, op);
}

// ---- index.Tensor(Tensor self, Tensor?[] indices)

std::vector<Tensor> index_infer(const Args& a, const char* op) {
  const Tensor& self = a[0].as_tensor(op);
  return {Tensor::meta(plan_index(self, a[1], op).result_shape, self.dtype())};
}
void index_out(const Args& a, const std::vector<Tensor>& out, const char* op) {
  const Tensor& self = a[0].as_tensor(op);
  cpu::index_gather(self, plan_index(self, a[1], op), out[0], op);
}

// ---- index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate)

void check_put(const AdvancedIndex& ai, const Tensor& values, const char* op) {
  bool fits = values.dim() <= static_cast<int64_t>(ai.result_shape.size());
  for (int64_t i = 1; fits && i <= values.dim(); ++i) {
    int64_t s = values.shape()[values.dim() - i];
    int64_t r = ai.result_shape[ai.result_shape.size() - static_cast<size_t>(i)];
    fits = s == r || s == 1;
  }
  IP_CHECK(fits, kShapeMismatch, "[", op, "] shape mismatch: value tensor of shape ",
           shape_str(values.shape()), " cannot be broadcast to indexing result of shape ",
           shape_str(ai.result_shape));
}

Value index_put_into(const Tensor& target, const Args& a, const char* op) {
  Tensor values = tensor_arg(a[2], op, target.dtype());
  AdvancedIndex ai = plan_index(target, a[1], op);
  cpu::index_put(target, ai, values, a[3].as_bool(op), op);
  return Value::from_tensor(target);
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

void index_put_out(const Args& a, const std::vector<Tensor>& out, const char* op) {
  cpu::copy_region(out[0], a[0].as_tensor(op));
  index_put_into(out[0], a, op);
}

// ---- one-dim index ops: self.dim() == 0 is handled as shape [1], as torch does.

Tensor as_1d(const Tensor& t) {
  return t.dim() == 0 ? t.unsqueeze(0) : t;
}

AdvancedIndex plan_dim(const Tensor& self, int64_t dim, const Tensor& index, const char* op) {
  const Tensor s = as_1d(self);
  return cpu::plan_dim_index(s.shape(), wrap_dim(dim, s.dim(), op), index, op);
}

// source must fill the indexed region exactly (index_copy, index_add).
void check_source(const Tensor& self, const AdvancedIndex& ai, const Tensor& source,
                  const char* op) {
  const Shape got = self.dim() == 0 && source.dim() == 0 ? Shape{1} : source.shape();
  IP_CHECK(got == ai.result_shape, kShapeMismatch, "[", op, "] source of shape ",
           shape_str(source.shape()), " does not match the indexed region ",
           shape_str(self.dim() == 0 ? Shape{} : ai.result_shape), " of self ",
           shape_str(self.shape()));
}

enum class DimOp { kCopy, kAdd, kFill };

// index_copy / index_add / index_fill into `target` (self or its copy).
void dim_put(const Tensor& target, const Args& a, DimOp kind, const char* op) {
  const int64_t dim = a[1].as_int(op);
  const Tensor index = tensor_arg(a[2], op);
  AdvancedIndex ai = plan_dim(target, dim, index, op);
  const Tensor t1 = as_1d(target);
  if (kind == DimOp::kFill) {
    Tensor value = tensor_arg(a[3], op, target.dtype());
    IP_CHECK(value.dim() == 0, kInvalidArgument, "[", op,
             "] only supports a 0-dimensional value tensor, got shape ", shape_str(value.shape()));
    cpu::index_put(t1, ai, value, false, op);
    return;
  }
  const Tensor source = tensor_arg(a[3], op, target.dtype());
  check_source(target, ai, source, op);
  const Tensor src1 = source.dim() == 0 ? source.unsqueeze(0) : source;
  if (kind == DimOp::kCopy) {
    cpu::index_put(t1, ai, src1, false, op);
  } else {
    cpu::index_put(t1, ai, src1, true, op, a[4].as_scalar(op));
  }
}

std::vector<Tensor> dim_infer(const Args& a, DimOp kind, const char* op) {
  const Tensor self = tensor_arg(a[0], op);
  const int64_t dim = a[1].as_int(op);
  const Tensor index = tensor_arg(a[2], op);
  AdvancedIndex ai = plan_dim(self, dim, index, op);
  if (kind != DimOp::kFill) check_source(self, ai, tensor_arg(a[3], op, self.dtype()), op);
  return {Tensor::meta(self.shape(), self.dtype())};
}

void register_dim_op(Registry& r, const char* name, DimOp kind, const std::string& params) {
  const std::string n = name;
  r.add_out(
      n + "(Tensor self, int dim, Tensor index, " + params + ") -> Tensor",
      [kind, name](const Args& a) { return dim_infer(a, kind, name); },
      [kind, name](const Args& a, const std::vector<Tensor>& out) {
        cpu::copy_region(out[0], tensor_arg(a[0], name));
        dim_put(out[0], a, kind, name);
      });
}

}  // namespace

void register_index_ops(Registry& r) {
  for (const char* name : {"index.Tensor", "_unsafe_index.Tensor"}) {
    std::string op = std::string(name).substr(0, std::string(name).find('.'));
    r.add_out(
        std::string(name) + "(Tensor self, Tensor?[] indices) -> Tensor",
        [op](const Args& a) { return index_infer(a, op.c_str()); },
        [op](const Args& a, const std::vector<Tensor>& out) { index_out(a, out, op.c_str()); });
  }
  for (const char* name : {"index_put", "_unsafe_index_put"}) {
    std::string op = name;
    r.add_out(
        op + "(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
        [op](const Args& a) { return index_put_infer(a, op.c_str()); },
        [op](const Args& a, const std::vector<Tensor>& out) { index_put_out(a, out, op.c_str()); });
  }
  auto put_ = [](const Args& a) {
    return index_put_into(a[0].as_tensor("index_put_"), a, "index_put_");
  };
  add_mutating(r,
               "index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool "
               "accumulate=False) -> Tensor(a!)",
               "index_put", put_);
  add_mutating(r,
               "_index_put_impl_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool "
               "accumulate=False, bool unsafe=False) -> Tensor(a!)",
               "index_put", put_);

  // index_select(Tensor self, int dim, Tensor index)
  r.add_out(
      "index_select(Tensor self, int dim, Tensor index) -> Tensor",
      [](const Args& a) {
        const Tensor self = tensor_arg(a[0], "index_select");
        AdvancedIndex ai = plan_dim(self, a[1].as_int("index_select"),
                                    tensor_arg(a[2], "index_select"), "index_select");
        Shape shape = self.dim() == 0 ? Shape{} : ai.result_shape;
        if (self.dim() == 0)
          IP_CHECK(numel_of(ai.result_shape) == 1, kInvalidArgument,
                   "[index_select] index to a 0-dim tensor can have only 1 value, got ",
                   numel_of(ai.result_shape));
        return std::vector<Tensor>{Tensor::meta(shape, self.dtype())};
      },
      [](const Args& a, const std::vector<Tensor>& out) {
        const Tensor self = tensor_arg(a[0], "index_select");
        AdvancedIndex ai = plan_dim(self, a[1].as_int("index_select"),
                                    tensor_arg(a[2], "index_select"), "index_select");
        cpu::index_gather(as_1d(self), ai, as_1d(out[0]), "index_select");
      });

  register_dim_op(r, "index_copy", DimOp::kCopy, "Tensor source");
  register_dim_op(r, "index_add", DimOp::kAdd, "Tensor source, *, Scalar alpha=1");
  r.add_out(
      "index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor",
      [](const Args& a) { return dim_infer(a, DimOp::kFill, "index_fill"); },
      [](const Args& a, const std::vector<Tensor>& out) {
        cpu::copy_region(out[0], tensor_arg(a[0], "index_fill"));
        dim_put(out[0], a, DimOp::kFill, "index_fill");
      });
  r.add_out(
      "index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor",
      [](const Args& a) { return dim_infer(a, DimOp::kFill, "index_fill"); },
      [](const Args& a, const std::vector<Tensor>& out) {
        cpu::copy_region(out[0], tensor_arg(a[0], "index_fill"));
        dim_put(out[0], a, DimOp::kFill, "index_fill");
      });

  add_mutating(r,
               "index_copy_(Tensor(a!) self, int dim, Tensor index, Tensor source) -> Tensor(a!)",
               "index_copy", [](const Args& a) {
                 dim_put(a[0].as_tensor("index_copy_"), a, DimOp::kCopy, "index_copy_");
                 return a[0];
               });
  add_mutating(r,
               "index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, Scalar "
               "alpha=1) -> Tensor(a!)",
               "index_add", [](const Args& a) {
                 dim_put(a[0].as_tensor("index_add_"), a, DimOp::kAdd, "index_add_");
                 return a[0];
               });
  for (const char* schema :
       {"index_fill_.int_Scalar(Tensor(a!) self, int dim, Tensor index, Scalar value) -> "
        "Tensor(a!)",
        "index_fill_.int_Tensor(Tensor(a!) self, int dim, Tensor index, Tensor value) -> "
        "Tensor(a!)"}) {
    std::string twin =
        std::string("index_fill.") +
        (std::string(schema).find("int_Scalar") != std::string::npos ? "int_Scalar" : "int_Tensor");
    add_mutating(r, schema, twin, [](const Args& a) {
      dim_put(a[0].as_tensor("index_fill_"), a, DimOp::kFill, "index_fill_");
      return a[0];
    });
  }
  r.tag({"index_put", "index_copy", "index_add", "index_fill"}, kScatterLike);
}

}  // namespace inplace::indexing
