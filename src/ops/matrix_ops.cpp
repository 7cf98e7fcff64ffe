// Matrix products: mm, bmm, matmul (every torch.matmul case), addmm, linear, dot, mv. Their
// checks are in ops/matrix_args.h, which the kernels read too.
#include "ops/matrix_args.h"
#include "ops/registry.h"

namespace inplace {

namespace {

// A product whose result is `meta(args)`.
void add_product(Registry& r, const std::string& schema, Tensor (*meta)(const Args&)) {
  r.add_out(
      schema, [meta](const Args& a) { return std::vector<Tensor>{meta(a)}; }, nullptr);
}

}  // namespace

void register_matrix_ops(Registry& r) {
  add_product(r, "mm(Tensor self, Tensor mat2) -> Tensor", matrix::mm_meta);
  add_product(r, "bmm(Tensor self, Tensor mat2) -> Tensor", matrix::bmm_meta);
  r.add_out(
      "matmul(Tensor self, Tensor other) -> Tensor",
      [](const Args& a) { return std::vector<Tensor>{matrix::matmul_meta("matmul", a)}; }, nullptr);
  r.add_alias("__matmul__", "matmul");
  // dot and mv are matmul restricted to 1-D x 1-D and 2-D x 1-D.
  r.add_out(
      "dot(Tensor self, Tensor tensor) -> Tensor",
      [](const Args& a) { return std::vector<Tensor>{matrix::vector_product_meta("dot", 1, a)}; },
      nullptr);
  r.add_out(
      "mv(Tensor self, Tensor vec) -> Tensor",
      [](const Args& a) { return std::vector<Tensor>{matrix::vector_product_meta("mv", 2, a)}; },
      nullptr);
  add_product(r,
              "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> "
              "Tensor",
              matrix::addmm_meta);
  add_product(r, "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
              matrix::linear_meta);
}

}  // namespace inplace
