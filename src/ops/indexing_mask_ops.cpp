// Mask ops (nonzero, masked_select: data-dependent shapes; masked_scatter) and embedding.
#include "kernels/cpu/index_common.h"
#include "kernels/cpu/index_kernels.h"
#include "ops/indexing_ops.h"

namespace inplace::indexing {

namespace {

// embedding(weight, indices): rows of a 2-d weight, result indices.shape + [embedding_dim].
cpu::AdvancedIndex plan_embedding(const Tensor& weight, const Tensor& indices,
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
  return cpu::plan_advanced_index(weight.shape(), {indices}, op);
}

std::optional<int64_t> opt_int(const Value& v, const char* op) {
  if (v.is_none()) return std::nullopt;
  return v.as_int(op);
}

}  // namespace

void register_mask_ops(Registry& r) {
  add_dynamic(r, "nonzero(Tensor self) -> Tensor", [](const Args& a) {
    return Value::from_tensor(cpu::nonzero(tensor_arg(a[0], "nonzero")));
  });
  add_dynamic(r, "argwhere(Tensor self) -> Tensor", [](const Args& a) {
    return Value::from_tensor(cpu::nonzero(tensor_arg(a[0], "argwhere")));
  });
  add_dynamic(r, "masked_select(Tensor self, Tensor mask) -> Tensor", [](const Args& a) {
    return Value::from_tensor(cpu::masked_select(
        tensor_arg(a[0], "masked_select"), tensor_arg(a[1], "masked_select"), "masked_select"));
  });

  // masked_scatter: the functional form broadcasts self and mask together (torch's
  // expand_outplace); the in-place form needs mask to broadcast to self.
  r.add_out(
      "masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor",
      [](const Args& a) {
        const Tensor self = tensor_arg(a[0], "masked_scatter");
        const Tensor mask = tensor_arg(a[1], "masked_scatter");
        IP_CHECK(is_mask_dtype(mask.dtype()), kDTypeMismatch,
                 "[masked_scatter] expected a bool mask, got ", dtype_name(mask.dtype()));
        Shape shape = broadcast_shapes(self.shape(), mask.shape(), "masked_scatter");
        return std::vector<Tensor>{Tensor::meta(shape, self.dtype())};
      },
      [](const Args& a, const std::vector<Tensor>& out) {
        cpu::copy_region(out[0], tensor_arg(a[0], "masked_scatter"));
        cpu::masked_scatter(out[0], tensor_arg(a[1], "masked_scatter"),
                            tensor_arg(a[2], "masked_scatter"), "masked_scatter");
      });
  add_mutating(r, "masked_scatter_(Tensor(a!) self, Tensor mask, Tensor source) -> Tensor(a!)",
               "masked_scatter", [](const Args& a) {
                 cpu::masked_scatter(a[0].as_tensor("masked_scatter_"),
                                     tensor_arg(a[1], "masked_scatter_"),
                                     tensor_arg(a[2], "masked_scatter_"), "masked_scatter_");
                 return a[0];
               });

  // aten.embedding(weight, indices, ...) and torch.nn.functional.embedding(input, weight, ...):
  // the same op with the tensors swapped, so F's spelling is its own op (see add_alias below).
  r.add_out(
      "embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool "
      "scale_grad_by_freq=False, bool sparse=False) -> Tensor",
      [](const Args& a) {
        const Tensor& w = a[0].as_tensor("embedding");
        auto ai = plan_embedding(w, a[1].as_tensor("embedding"), std::nullopt, "embedding");
        return std::vector<Tensor>{Tensor::meta(ai.result_shape, w.dtype())};
      },
      [](const Args& a, const std::vector<Tensor>& out) {
        const Tensor& w = a[0].as_tensor("embedding");
        auto ai = plan_embedding(w, a[1].as_tensor("embedding"), std::nullopt, "embedding");
        cpu::index_gather(w, ai, out[0], "embedding");
      });
  auto functional_plan = [](const Args& a) {
    const char* op = "embedding";
    IP_CHECK(a[3].is_none(), kUnsupported,
             "[embedding] max_norm renormalizes weight in place and is not supported");
    return plan_embedding(a[1].as_tensor(op), a[0].as_tensor(op), opt_int(a[2], op), op);
  };
  r.add_out(
      "embedding_functional(Tensor input, Tensor weight, int? padding_idx=None, float? "
      "max_norm=None, float norm_type=2.0, bool scale_grad_by_freq=False, bool sparse=False) -> "
      "Tensor",
      [functional_plan](const Args& a) {
        auto ai = functional_plan(a);
        return std::vector<Tensor>{
            Tensor::meta(ai.result_shape, a[1].as_tensor("embedding").dtype())};
      },
      [functional_plan](const Args& a, const std::vector<Tensor>& out) {
        cpu::index_gather(a[1].as_tensor("embedding"), functional_plan(a), out[0], "embedding");
      });
  r.add_alias("torch.nn.functional.embedding", "embedding_functional");
  // embedding_bf16_weight(input, weight): `F.embedding(input, weight).to(float32)` with a
  // bfloat16 table, the rows widened as they are read (the fuse_weight_casts pass makes it, so a
  // decode step reads one bf16 row and writes the float32 row in one kernel). Exact: widening is.
  auto lowp_plan = [](const Args& a) {
    const char* op = "embedding_bf16_weight";
    const Tensor& w = a[1].as_tensor(op);
    IP_CHECK(w.dtype() == DType::kBFloat16, kDTypeMismatch, "[", op,
             "] expected a bfloat16 weight, got ", dtype_name(w.dtype()));
    return plan_embedding(w, a[0].as_tensor(op), std::nullopt, op);
  };
  r.add_out(
      "embedding_bf16_weight(Tensor input, Tensor weight) -> Tensor",
      [lowp_plan](const Args& a) {
        return std::vector<Tensor>{Tensor::meta(lowp_plan(a).result_shape, DType::kFloat32)};
      },
      [lowp_plan](const Args& a, const std::vector<Tensor>& out) {
        const Tensor rows = Tensor::empty(out[0].shape(), DType::kBFloat16);
        cpu::index_gather(a[1].tensor, lowp_plan(a), rows, "embedding_bf16_weight");
        out[0].copy_from(rows);
      });
  r.tag({"masked_scatter"}, kScatterLike);
}

}  // namespace inplace::indexing
