#include "ops/index_ops_args.h"

#include <optional>

#include "core/error.h"

namespace inplace::indexing {

namespace {

// embedding(weight, indices): rows of a 2-d weight, result indices.shape + [embedding_dim].
AdvancedIndex plan_embedding(const Tensor& weight, const Tensor& indices,
                             std::optional<int64_t> padding_idx, const char* op) {
  IP_CHECK(weight.dim() == 2, kInvalidArgument, "[", op, "] 'weight' must be 2-D, got shape ",
           shape_str(weight.shape()));
  check_index_dtype(indices, op, "indices");
  if (padding_idx) {
    // Only gradients use padding_idx; torch still validates it.
    int64_t n = weight.shape()[0];
    IP_CHECK(*padding_idx >= -n && *padding_idx < n, kOutOfRange, "[", op, "] padding_idx ",
             *padding_idx, " must be within num_embeddings ", n);
  }
  return plan_advanced_index(weight.shape(), {indices}, op);
}

std::optional<int64_t> opt_int(const Value& v, const char* op) {
  if (v.is_none()) return std::nullopt;
  return v.as_int(op);
}

}  // namespace

AdvancedIndex plan_index(const Tensor& self, const Value& indices, const char* op) {
  std::vector<Tensor> idx = expand_index_masks(self.shape(), index_list(indices, op), op);
  return plan_advanced_index(self.shape(), idx, op);
}

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

AdvancedIndex plan_dim(const Tensor& self, int64_t dim, const Tensor& index, const char* op) {
  const Tensor s = as_1d(self);
  return plan_dim_index(s.shape(), wrap_dim(dim, s.dim(), op), index, op);
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

std::vector<Tensor> dim_infer(const Args& a, DimOp kind, const char* op) {
  const Tensor self = tensor_arg(a[0], op);
  const int64_t dim = a[1].as_int(op);
  const Tensor index = tensor_arg(a[2], op);
  AdvancedIndex ai = plan_dim(self, dim, index, op);
  if (kind != DimOp::kFill) check_source(self, ai, tensor_arg(a[3], op, self.dtype()), op);
  return {Tensor::meta(self.shape(), self.dtype())};
}

AdvancedIndex index_select_plan(const Args& a) {
  const Tensor self = tensor_arg(a[0], "index_select");
  AdvancedIndex ai =
      plan_dim(self, a[1].as_int("index_select"), tensor_arg(a[2], "index_select"), "index_select");
  ai.wrap_negative = false;  // PyTorch refuses a negative index
  if (self.dim() == 0)
    IP_CHECK(numel_of(ai.result_shape) == 1, kInvalidArgument,
             "[index_select] index to a 0-dim tensor can have only 1 value, got ",
             numel_of(ai.result_shape));
  return ai;
}

Shape masked_scatter_shape(const Args& a) {
  const Tensor self = tensor_arg(a[0], "masked_scatter");
  const Tensor mask = tensor_arg(a[1], "masked_scatter");
  IP_CHECK(is_mask_dtype(mask.dtype()), kDTypeMismatch,
           "[masked_scatter] expected a bool mask, got ", dtype_name(mask.dtype()));
  return broadcast_shapes(self.shape(), mask.shape(), "masked_scatter");
}

AdvancedIndex embedding_plan(const Args& a) {
  return plan_embedding(a[kEmbedding.weight].as_tensor("embedding"),
                        a[kEmbedding.indices].as_tensor("embedding"), std::nullopt, "embedding");
}

AdvancedIndex embedding_functional_plan(const Args& a) {
  const char* op = "embedding";
  IP_CHECK(a[3].is_none(), kUnsupported,
           "[embedding] max_norm renormalizes weight in place and is not supported");
  const EmbeddingOperands e = kEmbeddingFunctional;
  return plan_embedding(a[e.weight].as_tensor(op), a[e.indices].as_tensor(op), opt_int(a[2], op),
                        op);
}

AdvancedIndex fused_embedding_plan(const Args& a) {
  const char* op = "fused_embedding";
  const Tensor& w = a[kEmbeddingFunctional.weight].as_tensor(op);
  IP_CHECK(is_floating(w.dtype()) && dtype_size(w.dtype()) <= dtype_size(DType::kFloat32),
           kDTypeMismatch, "[", op,
           "] expected a table of a float dtype no wider than float32, got ",
           dtype_name(w.dtype()));
  return plan_embedding(w, a[kEmbeddingFunctional.indices].as_tensor(op), std::nullopt, op);
}

}  // namespace inplace::indexing
