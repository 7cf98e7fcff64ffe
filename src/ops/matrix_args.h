// Argument checks of the matrix products (mm, bmm, matmul, dot, mv, addmm, linear), read by
// their declarations (shape/dtype rules) and by the kernels, which check a call as its
// declaration does: each returns the product's result meta, or fails as torch does.
#pragma once
#include <cstdint>

#include "core/tensor.h"
#include "core/value.h"
#include "ops/registry.h"  // Args

namespace inplace::matrix {

Tensor mm_meta(const Args& a);                      // mm(self, mat2)
Tensor bmm_meta(const Args& a);                     // bmm(self, mat2)
Tensor matmul_meta(const char* op, const Args& a);  // matmul(self, other): torch's shapes
Tensor vector_product_meta(const char* op, int64_t adim, const Args& a);  // dot, mv
Tensor addmm_meta(const Args& a);   // addmm(self, mat1, mat2, beta, alpha)
Tensor linear_meta(const Args& a);  // linear(input, weight, bias)

}  // namespace inplace::matrix
