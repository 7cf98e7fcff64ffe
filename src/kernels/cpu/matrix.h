// Matrix products. float32/float64 go to OpenBLAS (loaded on first use: blas_loader.h), except
// decode's products of at most kGemvMaxRows rows (gemv.h); half types take the same GEMV at
// decode size over a linear layer's weight (x @ W^T, W's rows contiguous), else a loop that
// accumulates in float; integers a loop in 64-bit integers.
#pragma once
#include <cstdint>

#include "core/scalar.h"
#include "core/tensor.h"

namespace inplace::cpu {

// One matrix: elements at data + row * row_stride + col * col_stride.
template <typename T>
struct MatrixRef {
  T* data;
  int64_t rows, cols, row_stride, col_stride;
};

// c = alpha * a @ b + beta * c ; beta == 0 never reads c. c's columns have unit stride.
void gemm(MatrixRef<const float> a, MatrixRef<const float> b, MatrixRef<float> c, float alpha,
          float beta);
void gemm(MatrixRef<const double> a, MatrixRef<const double> b, MatrixRef<double> c, double alpha,
          double beta);

// out[..., m, n] = alpha * a[..., m, k] @ b[..., k, n] + beta * out, for every batch index; a's
// and b's batch dims broadcast to out's. One dtype for all three (not bool); beta == 0 ignores
// out's contents.
void matmul(const Tensor& a, const Tensor& b, const Tensor& out, Scalar alpha = Scalar(1),
            Scalar beta = Scalar(0));

}  // namespace inplace::cpu
