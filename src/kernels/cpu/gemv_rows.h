// Decode products over a weight stored [in, out] (x @ W with W's rows contiguous: GPT-2's
// Conv1D): y[r, j] = sum over p of x[r, p] * W[p, j] in float for a few rows of a float x, W
// float32, bfloat16 or float16 (widened in registers). W is streamed row by row in address order,
// eight rows at a time, while a chunk of partial sums stays in the L1 cache; each output is one
// chain of fused multiply-adds over p in order from 0, so the AVX-512 and AVX2 kernels and the
// portable loop (std::fma) give the same bits, and so does any split of the columns among
// threads. With half weights and a half x the products are exact in float, so the sums are also
// the plain product loop's (matrix.cpp). OpenBLAS's sgemm, which took the float32 products
// before, packs W first and reads it at about half the bandwidth. Used where the CPU has FMA.
#pragma once
#include <cstdint>

#include "core/half.h"
#include "kernels/cpu/matrix.h"

namespace inplace::cpu {

template <typename W>
struct GemvRowsArgs {
  const float* x;  // [rows, k], rows x_stride apart, unit column stride
  int64_t x_stride, rows;
  const W* w;  // [k, n], rows w_stride apart, unit column stride
  int64_t w_stride, n, k;
  float* y;  // [rows, n], rows y_stride apart, unit column stride: the sums (overwritten)
  int64_t y_stride;
};

// Whether this CPU runs the vector kernels (AVX-512F, or AVX2 with FMA).
bool gemv_rows_vectorized();

// Columns [j0, j1) of the sums; rows <= kGemvRowsMaxRows. `portable` forces the portable loop
// (the reference the vector kernels are tested against: the same bits).
inline constexpr int64_t kGemvRowsMaxRows = 4;
template <typename W>
void gemv_rows(const GemvRowsArgs<W>& a, int64_t j0, int64_t j1, bool portable = false);
// The whole product, its columns shared among the threads of the calling context's pool.
template <typename W>
void gemv_rows_parallel(const GemvRowsArgs<W>& a);

// c = alpha * a @ b + beta * c through gemv_rows where it applies (a has at most
// kGemvRowsMaxRows rows with unit column stride, b's rows have unit column stride, the CPU has
// the vector kernels); false otherwise, having written nothing.
bool try_gemv_rows(MatrixRef<const float> a, MatrixRef<const float> b, MatrixRef<float> c,
                   float alpha, float beta);

}  // namespace inplace::cpu
