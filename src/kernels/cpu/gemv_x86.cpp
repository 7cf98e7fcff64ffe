#include "kernels/cpu/gemv_x86.h"

// GCC 12 warns inside its own AVX-512 reduction intrinsics (a false positive).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "kernels/cpu/widen_x86.h"

namespace inplace::cpu::x86 {

namespace {

template <typename W>
inline void store(const GemvArgs<W>& a, int64_t r, int64_t j, float s) {
  float& out = a.y[r * a.y_stride + j];
  out = a.beta == 0.0f ? a.alpha * s : a.alpha * s + a.beta * out;
}

// ---- AVX-512: 16 floats per register, 64 weights (4 registers) per iteration ----

#define IP_AVX512 __attribute__((target("avx512f,avx512bw,fma"), always_inline)) inline

// y[r, j] for every row r of x: weight row j read once, start to end.
template <int R, typename W>
IP_AVX512 void row512(const GemvArgs<W>& a, int64_t j) {
  const W* w = a.w + j * a.w_stride;
  __m512 acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int u = 0; u < 4; ++u) acc[r][u] = _mm512_setzero_ps();
  int64_t e = 0;
  for (; e + 64 <= a.k; e += 64) {
    __m512 ws[4];
    for (int u = 0; u < 4; ++u) ws[u] = load16(w + e + 16 * u);
    for (int r = 0; r < R; ++r) {
      const float* x = a.x + r * a.x_stride + e;
      for (int u = 0; u < 4; ++u)
        acc[r][u] = _mm512_fmadd_ps(_mm512_loadu_ps(x + 16 * u), ws[u], acc[r][u]);
    }
  }
  for (; e + 16 <= a.k; e += 16) {
    const __m512 ws = load16(w + e);
    for (int r = 0; r < R; ++r)
      acc[r][0] = _mm512_fmadd_ps(_mm512_loadu_ps(a.x + r * a.x_stride + e), ws, acc[r][0]);
  }
  for (int r = 0; r < R; ++r) {
    const __m512 s01 = _mm512_add_ps(acc[r][0], acc[r][1]);
    const __m512 s23 = _mm512_add_ps(acc[r][2], acc[r][3]);
    float s = _mm512_reduce_add_ps(_mm512_add_ps(s01, s23));
    const float* x = a.x + r * a.x_stride;
    for (int64_t t = e; t < a.k; ++t) s += x[t] * widen(w[t]);
    store(a, r, j, s);
  }
}

template <int R, typename W>
__attribute__((target("avx512f,avx512bw,fma"))) void rows512(const GemvArgs<W>& a, int64_t j0,
                                                             int64_t j1) {
  for (int64_t j = j0; j < j1; ++j) row512<R>(a, j);
}

// ---- AVX2: 8 floats per register, 32 weights (4 registers) per iteration ----

#define IP_AVX2 __attribute__((target("avx2,fma,f16c"), always_inline)) inline

IP_AVX2 float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <int R, typename W>
IP_AVX2 void row256(const GemvArgs<W>& a, int64_t j) {
  const W* w = a.w + j * a.w_stride;
  __m256 acc[R][4];
  for (int r = 0; r < R; ++r)
    for (int u = 0; u < 4; ++u) acc[r][u] = _mm256_setzero_ps();
  int64_t e = 0;
  for (; e + 32 <= a.k; e += 32) {
    __m256 ws[4];
    for (int u = 0; u < 4; ++u) ws[u] = load8(w + e + 8 * u);
    for (int r = 0; r < R; ++r) {
      const float* x = a.x + r * a.x_stride + e;
      for (int u = 0; u < 4; ++u)
        acc[r][u] = _mm256_fmadd_ps(_mm256_loadu_ps(x + 8 * u), ws[u], acc[r][u]);
    }
  }
  for (; e + 8 <= a.k; e += 8) {
    const __m256 ws = load8(w + e);
    for (int r = 0; r < R; ++r)
      acc[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(a.x + r * a.x_stride + e), ws, acc[r][0]);
  }
  for (int r = 0; r < R; ++r) {
    const __m256 s01 = _mm256_add_ps(acc[r][0], acc[r][1]);
    const __m256 s23 = _mm256_add_ps(acc[r][2], acc[r][3]);
    float s = hsum8(_mm256_add_ps(s01, s23));
    const float* x = a.x + r * a.x_stride;
    for (int64_t t = e; t < a.k; ++t) s += x[t] * widen(w[t]);
    store(a, r, j, s);
  }
}

template <int R, typename W>
__attribute__((target("avx2,fma,f16c"))) void rows256(const GemvArgs<W>& a, int64_t j0,
                                                      int64_t j1) {
  for (int64_t j = j0; j < j1; ++j) row256<R>(a, j);
}

template <typename W>
void run512(const GemvArgs<W>& a, int64_t j0, int64_t j1) {
  switch (a.rows) {
    case 1:
      return rows512<1>(a, j0, j1);
    case 2:
      return rows512<2>(a, j0, j1);
    case 3:
      return rows512<3>(a, j0, j1);
    default:
      return rows512<4>(a, j0, j1);
  }
}

template <typename W>
void run256(const GemvArgs<W>& a, int64_t j0, int64_t j1) {
  switch (a.rows) {
    case 1:
      return rows256<1>(a, j0, j1);
    case 2:
      return rows256<2>(a, j0, j1);
    case 3:
      return rows256<3>(a, j0, j1);
    default:
      return rows256<4>(a, j0, j1);
  }
}

}  // namespace

void gemv_avx512(const GemvArgs<float>& a, int64_t j0, int64_t j1) {
  run512(a, j0, j1);
}
void gemv_avx512(const GemvArgs<BFloat16>& a, int64_t j0, int64_t j1) {
  run512(a, j0, j1);
}
void gemv_avx2(const GemvArgs<float>& a, int64_t j0, int64_t j1) {
  run256(a, j0, j1);
}
void gemv_avx2(const GemvArgs<BFloat16>& a, int64_t j0, int64_t j1) {
  run256(a, j0, j1);
}
void gemv_avx512(const GemvArgs<Half>& a, int64_t j0, int64_t j1) {
  run512(a, j0, j1);
}
void gemv_avx2(const GemvArgs<Half>& a, int64_t j0, int64_t j1) {
  run256(a, j0, j1);
}

}  // namespace inplace::cpu::x86
