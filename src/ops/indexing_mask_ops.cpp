// Mask ops (nonzero, masked_select: data-dependent shapes, computed by cpu eager kernels;
// masked_scatter) and embedding. Their shape rules: ops/index_ops_args.h.
#include "ops/index_ops_args.h"
#include "ops/indexing_ops.h"

namespace inplace::indexing {

void register_mask_ops(Registry& r) {
  add_dynamic(r, "nonzero(Tensor self) -> Tensor", nullptr);
  add_dynamic(r, "argwhere(Tensor self) -> Tensor", nullptr);
  add_dynamic(r, "masked_select(Tensor self, Tensor mask) -> Tensor", nullptr);

  // masked_scatter: the functional form broadcasts self and mask together (torch's
  // expand_outplace); the in-place form needs mask to broadcast to self.
  r.add_out(
      "masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor",
      [](const Args& a) {
        const Tensor self = tensor_arg(a[0], "masked_scatter");
        return std::vector<Tensor>{Tensor::meta(masked_scatter_shape(a), self.dtype())};
      },
      nullptr);
  add_mutating(r, "masked_scatter_(Tensor(a!) self, Tensor mask, Tensor source) -> Tensor(a!)",
               "masked_scatter", nullptr);

  // aten.embedding(weight, indices, ...) and torch.nn.functional.embedding(input, weight, ...):
  // the same op with the tensors swapped, so F's spelling is its own op (see add_alias below).
  r.add_out(
      "embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool "
      "scale_grad_by_freq=False, bool sparse=False) -> Tensor",
      [](const Args& a) {
        const Tensor& w = a[0].as_tensor("embedding");
        return std::vector<Tensor>{Tensor::meta(embedding_plan(a).result_shape, w.dtype())};
      },
      nullptr);
  r.add_out(
      "embedding_functional(Tensor input, Tensor weight, int? padding_idx=None, float? "
      "max_norm=None, float norm_type=2.0, bool scale_grad_by_freq=False, bool sparse=False) -> "
      "Tensor",
      [](const Args& a) {
        auto ai = embedding_functional_plan(a);
        return std::vector<Tensor>{
            Tensor::meta(ai.result_shape, a[1].as_tensor("embedding").dtype())};
      },
      nullptr);
  r.add_alias("torch.nn.functional.embedding", "embedding_functional");
  // fused_embedding(input, weight): `F.embedding(input, weight).to(float32)`, the table of a
  // float dtype that may be narrower (bfloat16), the rows widened as they are read (the
  // fuse_weight_casts pass makes it, so a decode step reads one bf16 row and writes the float32
  // row in one kernel). Exact: widening is.
  r.add_out(
      "fused_embedding(Tensor input, Tensor weight) -> Tensor",
      [](const Args& a) {
        return std::vector<Tensor>{
            Tensor::meta(fused_embedding_plan(a).result_shape, DType::kFloat32)};
      },
      nullptr);
  r.tag({"masked_scatter"}, kScatterLike);
}

}  // namespace inplace::indexing
