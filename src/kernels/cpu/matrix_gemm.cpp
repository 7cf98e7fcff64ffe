// One matrix product through cblas_{s,d}gemm (OpenBLAS, loaded on first use: blas_loader.h):
// transposed operands are passed as transposes, anything else that BLAS cannot address is packed
// first.

#include <algorithm>
#include <climits>
#include <vector>

#include "kernels/cpu/blas_loader.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/gemv_rows.h"
#include "kernels/cpu/matrix.h"

namespace inplace::cpu {

namespace {

// Whether (rows x cols, strides) is a row-major matrix with a valid leading dimension.
bool row_major_ld(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int64_t* ld) {
  if (!(cols == 1 || cs == 1)) return false;
  if (rows == 1) {
    *ld = std::max<int64_t>(cols, 1);
    return true;
  }
  if (rs < std::max<int64_t>(cols, 1)) return false;
  *ld = rs;
  return true;
}

template <typename T>
struct BlasOperand {
  const T* data;
  BlasTranspose trans;
  int64_t ld;
  std::vector<T> packed;  // owns the data when the layout needed packing
};

template <typename T>
void describe(MatrixRef<const T> m, BlasOperand<T>* op) {
  int64_t ld = 0;
  if (row_major_ld(m.rows, m.cols, m.row_stride, m.col_stride, &ld)) {
    *op = {m.data, kBlasNoTrans, ld, {}};
  } else if (row_major_ld(m.cols, m.rows, m.col_stride, m.row_stride, &ld)) {
    *op = {m.data, kBlasTrans, ld, {}};
  } else {
    op->packed.resize(static_cast<size_t>(m.rows * m.cols));
    for (int64_t i = 0; i < m.rows; ++i)
      for (int64_t j = 0; j < m.cols; ++j)
        op->packed[i * m.cols + j] = m.data[i * m.row_stride + j * m.col_stride];
    op->data = op->packed.data();
    op->trans = kBlasNoTrans;
    op->ld = m.cols;
  }
}

void check_blas_size(int64_t v) {
  IP_CHECK(v <= INT_MAX, kUnsupported, "[gemm] matrix dimension ", v,
           " exceeds the BLAS int range");
}

template <typename T, typename Call>
void gemm_impl(MatrixRef<const T> a, MatrixRef<const T> b, MatrixRef<T> c, T alpha, T beta,
               Call call) {
  const int64_t m = a.rows, k = a.cols, n = b.cols;
  IP_ASSERT(b.rows == k && c.rows == m && c.cols == n, "gemm operand shapes agree");
  if (m == 0 || n == 0) return;
  IP_ASSERT(c.col_stride == 1 || n == 1, "gemm output columns have unit stride");
  if (k == 0) {  // BLAS needs lda >= 1; the product is empty, so c = beta * c
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        T& v = c.data[i * c.row_stride + j];
        v = beta == T(0) ? T(0) : beta * v;
      }
    return;
  }
  BlasOperand<T> oa, ob;
  describe(a, &oa);
  describe(b, &ob);
  const int64_t ldc = m == 1 ? n : c.row_stride;
  IP_ASSERT(ldc >= n, "gemm output rows do not overlap");
  for (int64_t v : {m, n, k, oa.ld, ob.ld, ldc}) check_blas_size(v);
  call(oa.trans, ob.trans, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha,
       oa.data, static_cast<int>(oa.ld), ob.data, static_cast<int>(ob.ld), beta, c.data,
       static_cast<int>(ldc));
}

}  // namespace

void gemm(MatrixRef<const float> a, MatrixRef<const float> b, MatrixRef<float> c, float alpha,
          float beta) {
  if (try_gemv(a, b, c, alpha, beta)) return;       // decode: x @ W^T at read bandwidth
  if (try_gemv_rows(a, b, c, alpha, beta)) return;  // decode: x @ W, W stored [in, out]
  gemm_impl<float>(
      a, b, c, alpha, beta,
      [](BlasTranspose ta, BlasTranspose tb, int m, int n, int k, float al, const float* pa,
         int lda, const float* pb, int ldb, float be, float* pc, int ldc) {
        blas().sgemm(kBlasRowMajor, ta, tb, m, n, k, al, pa, lda, pb, ldb, be, pc, ldc);
      });
}

void gemm(MatrixRef<const double> a, MatrixRef<const double> b, MatrixRef<double> c, double alpha,
          double beta) {
  gemm_impl<double>(
      a, b, c, alpha, beta,
      [](BlasTranspose ta, BlasTranspose tb, int m, int n, int k, double al, const double* pa,
         int lda, const double* pb, int ldb, double be, double* pc, int ldc) {
        blas().dgemm(kBlasRowMajor, ta, tb, m, n, k, al, pa, lda, pb, ldb, be, pc, ldc);
      });
}

}  // namespace inplace::cpu
