// gemv_rows.h: the sums over a float32 weight stored [in, out], column chunks at a time (each
// chunk's partial sums stay in L1 while every row of W passes), the chunks shared among the
// calling context's threads.
#include "kernels/cpu/gemv_rows.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/cpu/gemv_x86.h"
#include "kernels/cpu/widen_x86.h"

namespace inplace::cpu {

namespace {

// Partial sums a chunk holds per row of x: up to 4 rows x 2048 floats = 32 KB, in L1.
constexpr int64_t kChunk = 2048;
// Rows of W a pass over the chunk reads (each partial sum loaded and stored once per pass):
// measured best of 1, 2, 4, 8 and 16 on a 2-vCPU AMD EPYC (8: 18-24 GB/s, against 16 for
// OpenBLAS's sgemm and 34 for a plain read).
constexpr int kPass = 8;

using x86::load16;
using x86::load8;
using x86::widen;

template <typename W>
void chunk_portable(const GemvRowsArgs<W>& a, int64_t j0, int64_t len) {
  for (int64_t p = 0; p < a.k; ++p) {
    const W* wr = a.w + p * a.w_stride + j0;
    for (int64_t r = 0; r < a.rows; ++r) {
      const float xv = a.x[r * a.x_stride + p];
      float* y = a.y + r * a.y_stride + j0;
      for (int64_t j = 0; j < len; ++j) y[j] = std::fma(xv, widen(wr[j]), y[j]);
    }
  }
}

// One chunk by vectors of L lanes: kPass rows of W a pass, each partial sum loaded once, the
// pass's products added to it in order of p by fused multiply-adds, stored once; the columns
// past the last whole vector and the rows past the last whole pass by std::fma, in the same
// order. Vec: load, store, broadcast and fma of one vector type.
#define IP_ROWS_CHUNK(NAME, TARGET, VEC, L, LOAD, LOADW, STORE, SET1, FMA)                        \
  template <typename W>                                                                           \
  TARGET void NAME(const GemvRowsArgs<W>& a, int64_t j0, int64_t len) {                           \
    const int64_t vec = len - len % (L);                                                          \
    int64_t p = 0;                                                                                \
    for (; p + kPass <= a.k; p += kPass) {                                                        \
      const W* w0 = a.w + p * a.w_stride + j0;                                                    \
      for (int64_t r = 0; r < a.rows; ++r) {                                                      \
        const float* x = a.x + r * a.x_stride + p;                                                \
        VEC xs[kPass];                                                                            \
        for (int q = 0; q < kPass; ++q) xs[q] = SET1(x[q]);                                       \
        float* y = a.y + r * a.y_stride + j0;                                                     \
        for (int64_t j = 0; j < vec; j += (L)) {                                                  \
          VEC s = LOAD(y + j);                                                                    \
          _Pragma("GCC unroll 8") for (int q = 0; q < kPass; ++q) s =                             \
              FMA(xs[q], LOADW(w0 + q * a.w_stride + j), s);                                      \
          STORE(y + j, s);                                                                        \
        }                                                                                         \
        for (int64_t j = vec; j < len; ++j) {                                                     \
          float s = y[j];                                                                         \
          for (int q = 0; q < kPass; ++q) s = std::fma(x[q], widen(w0[q * a.w_stride + j]), s);   \
          y[j] = s;                                                                               \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
    for (; p < a.k; ++p) {                                                                        \
      const W* wr = a.w + p * a.w_stride + j0;                                                    \
      for (int64_t r = 0; r < a.rows; ++r) {                                                      \
        const float xv = a.x[r * a.x_stride + p];                                                 \
        const VEC xb = SET1(xv);                                                                  \
        float* y = a.y + r * a.y_stride + j0;                                                     \
        for (int64_t j = 0; j < vec; j += (L)) STORE(y + j, FMA(xb, LOADW(wr + j), LOAD(y + j))); \
        for (int64_t j = vec; j < len; ++j) y[j] = std::fma(xv, widen(wr[j]), y[j]);              \
      }                                                                                           \
    }                                                                                             \
  }

IP_ROWS_CHUNK(chunk_avx512, __attribute__((target("avx512f"))), __m512, 16, _mm512_loadu_ps, load16,
              _mm512_storeu_ps, _mm512_set1_ps, _mm512_fmadd_ps)
IP_ROWS_CHUNK(chunk_avx2, __attribute__((target("avx2,fma,f16c"))), __m256, 8, _mm256_loadu_ps,
              load8, _mm256_storeu_ps, _mm256_set1_ps, _mm256_fmadd_ps)
#undef IP_ROWS_CHUNK

// The vector kernels' instruction sets, as the decode GEMV detects them (gemv_x86.h: AVX-512 F
// and BW with FMA; AVX2 with FMA and F16C). Asked at run time, not in a static initializer:
// they are another file's statics.
enum class Isa { kNone, kAvx2, kAvx512 };
Isa isa() {
  return x86::avx512_supported() ? Isa::kAvx512 : x86::avx2_supported() ? Isa::kAvx2 : Isa::kNone;
}

}  // namespace

bool gemv_rows_vectorized() {
  return isa() != Isa::kNone;
}

template <typename W>
void gemv_rows(const GemvRowsArgs<W>& a, int64_t j0, int64_t j1, bool portable) {
  const Isa use = portable ? Isa::kNone : isa();
  for (int64_t c0 = j0; c0 < j1; c0 += kChunk) {
    const int64_t len = std::min(kChunk, j1 - c0);
    for (int64_t r = 0; r < a.rows; ++r) std::fill_n(a.y + r * a.y_stride + c0, len, 0.0f);
    if (use == Isa::kAvx512)
      chunk_avx512(a, c0, len);
    else if (use == Isa::kAvx2)
      chunk_avx2(a, c0, len);
    else
      chunk_portable(a, c0, len);
  }
}

template void gemv_rows(const GemvRowsArgs<float>&, int64_t, int64_t, bool);
template void gemv_rows(const GemvRowsArgs<BFloat16>&, int64_t, int64_t, bool);
template void gemv_rows(const GemvRowsArgs<Half>&, int64_t, int64_t, bool);

template <typename W>
void gemv_rows_parallel(const GemvRowsArgs<W>& a) {
  ThreadPool* pool = current_thread_pool();
  const int64_t threads = pool == nullptr || a.n * a.k < (1 << 16) ? 1 : pool->threads();
  // Columns in whole multiples of 64 a task, a few tasks a thread (a late thread takes fewer).
  const int64_t tasks = std::max<int64_t>(1, std::min<int64_t>(threads * 4, (a.n + 63) / 64));
  if (tasks == 1 || threads < 2) {
    gemv_rows(a, 0, a.n);
    return;
  }
  const int64_t per = ((a.n + tasks - 1) / tasks + 63) & ~int64_t{63};
  auto task = [&](int64_t t) {
    const int64_t b = std::min(a.n, t * per), e = std::min(a.n, b + per);
    if (b < e) gemv_rows(a, b, e);
  };
  pool->parallel_for(tasks, task);
}
template void gemv_rows_parallel(const GemvRowsArgs<float>&);
template void gemv_rows_parallel(const GemvRowsArgs<BFloat16>&);
template void gemv_rows_parallel(const GemvRowsArgs<Half>&);

bool try_gemv_rows(MatrixRef<const float> a, MatrixRef<const float> b, MatrixRef<float> c,
                   float alpha, float beta) {
  const int64_t m = a.rows, k = a.cols, n = b.cols;
  if (!gemv_rows_vectorized() || m < 1 || m > kGemvRowsMaxRows || k < 1 || n < 2) return false;
  if (b.col_stride != 1 || a.col_stride != 1 || c.col_stride != 1) return false;
  // The sums into c itself where alpha is 1 and beta 0 (a decode product's usual form).
  const bool direct = alpha == 1.0f && beta == 0.0f;
  std::vector<float> scratch(direct ? 0 : static_cast<size_t>(m * n));
  float* y = direct ? c.data : scratch.data();
  const int64_t ys = direct ? c.row_stride : n;
  gemv_rows_parallel(
      GemvRowsArgs<float>{a.data, a.row_stride, m, b.data, b.row_stride, n, k, y, ys});
  if (!direct)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float& out = c.data[i * c.row_stride + j];
        const float s = scratch[static_cast<size_t>(i * n + j)];
        out = beta == 0.0f ? alpha * s : alpha * s + beta * out;
      }
  return true;
}

}  // namespace inplace::cpu
