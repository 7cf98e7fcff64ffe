// Matrix-vector products for decoding: y = alpha * x @ W^T (+ beta * y) for a few rows of x and
// a weight W stored [n, k] with contiguous rows (nn.Linear's layout). W is streamed once, in
// address order, for all the rows of x, so the step reads the weights at the machine's read
// bandwidth. Vector kernels for AVX-512 and AVX2+FMA (gemv_x86.h), a portable loop elsewhere,
// chosen by the CPU's features. Weights float32, bfloat16 or float16 (widened in registers).
#pragma once
#include <cstdint>

#include "core/half.h"
#include "kernels/cpu/matrix.h"

namespace inplace::cpu {

// The most rows of x one pass serves (decode has one; grouped attention a few).
inline constexpr int64_t kGemvMaxRows = 4;

template <typename W>
struct GemvArgs {
  const float* x;  // [rows, k], rows x_stride apart, unit column stride
  int64_t x_stride, rows;
  const W* w;  // [n, k], rows w_stride apart, unit column stride
  int64_t w_stride, n, k;
  float* y;  // [rows, n], rows y_stride apart, unit column stride
  int64_t y_stride;
  float alpha = 1, beta = 0;  // beta == 0 never reads y
};

// Output columns [n_begin, n_end) of the product (a thread's share). rows <= kGemvMaxRows.
void gemv(const GemvArgs<float>& a, int64_t n_begin, int64_t n_end);
void gemv(const GemvArgs<BFloat16>& a, int64_t n_begin, int64_t n_end);
void gemv(const GemvArgs<Half>& a, int64_t n_begin, int64_t n_end);
// The portable loop whatever the CPU (the reference the vector kernels are tested against).
void gemv_portable(const GemvArgs<float>& a, int64_t n_begin, int64_t n_end);
void gemv_portable(const GemvArgs<BFloat16>& a, int64_t n_begin, int64_t n_end);
void gemv_portable(const GemvArgs<Half>& a, int64_t n_begin, int64_t n_end);

// The whole product, its columns shared among the threads of the calling context's pool.
template <typename W>
void gemv_parallel(const GemvArgs<W>& a);

// c = alpha * a @ b + beta * c through gemv when a has at most kGemvMaxRows rows and b is the
// transpose of a row-major weight (b's rows have unit stride: x @ W^T); false otherwise.
bool try_gemv(MatrixRef<const float> a, MatrixRef<const float> b, MatrixRef<float> c, float alpha,
              float beta);

// The same for a half type T (bfloat16, float16; a model exported at that dtype): a's rows are
// widened to float (exact), the GEMV streams W as T and sums in float, then each output is
// al * s (+ be * c) rounded to T, as the half gemm loop finishes one (opmath float). The sums run
// in the GEMV's lane order, not from p = 0 up: decode products of a half model read their
// weights at the float32 kernel's bandwidth per byte (the eager interpreter and the compiled
// engine share this kernel, so their bits agree). false where it does not apply.
template <typename T>
bool try_gemv_half(MatrixRef<const T> a, MatrixRef<const T> b, MatrixRef<T> c, float alpha,
                   float beta);

}  // namespace inplace::cpu
