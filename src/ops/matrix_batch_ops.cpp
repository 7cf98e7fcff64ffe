// Batched products with an added term: baddbmm (one product per batch) and addbmm (the
// products summed over the batch), with their in-place forms. bmm itself is in matrix_ops.cpp.
// Their checks are in ops/matrix_batch_args.h, which the kernels read too.
#include "ops/matrix_batch_args.h"
#include "ops/registry.h"

namespace inplace {

namespace {

using matrix::BatchProduct;
using matrix::check_batch_product;

void register_baddbmm(Registry& r) {
  r.add_out(
      "baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> "
      "Tensor",
      [](const Args& a) {
        BatchProduct p = check_batch_product(a, "baddbmm", false);
        return std::vector<Tensor>{Tensor::meta({p.batch, p.rows, p.cols}, a[0].tensor.dtype())};
      },
      nullptr);
  r.add_inplace(
      "baddbmm_(Tensor(a!) self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar "
      "alpha=1) -> Tensor(a!)",
      "baddbmm");
}

void register_addbmm(Registry& r) {
  r.add_out(
      "addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> "
      "Tensor",
      [](const Args& a) {
        BatchProduct p = check_batch_product(a, "addbmm", true);
        return std::vector<Tensor>{Tensor::meta({p.rows, p.cols}, a[0].tensor.dtype())};
      },
      nullptr);
  r.add_inplace(
      "addbmm_(Tensor(a!) self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar "
      "alpha=1) -> Tensor(a!)",
      "addbmm");
}

}  // namespace

void register_matrix_batch_ops(Registry& r) {
  register_baddbmm(r);
  register_addbmm(r);
}

}  // namespace inplace
