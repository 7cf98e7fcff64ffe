// Decode GEMV. Lanes accumulate independently (kLanes partial sums per output), so the inner
// loops vectorise without reassociating float adds; the lanes are summed once per output.
#include "kernels/cpu/gemv.h"

#include "core/thread_pool.h"

// GCC 12 warns inside its own AVX-512 reduction intrinsics (a false positive).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace inplace::cpu {

namespace {

constexpr int64_t kLanes = 16;  // one AVX-512 register of floats, two AVX2 ones
constexpr int64_t kBlockRows = 4;
constexpr int64_t kPrefetch = 512;  // elements ahead in each weight row

inline float load(const float* p) {
  return *p;
}
inline float load(const BFloat16* p) {
  return std::bit_cast<float>(uint32_t{p->bits} << 16);
}

// y[r, j] for j in [j0, j0 + NB): NB weight rows against R rows of x.
template <int R, int NB, typename W>
__attribute__((always_inline)) inline void block(const GemvArgs<W>& a, int64_t j0) {
  float acc[R][NB][kLanes] = {};
  const int64_t kv = a.k - a.k % kLanes;
  for (int64_t e = 0; e < kv; e += kLanes) {
    float xs[R][kLanes];
    for (int r = 0; r < R; ++r)
      for (int64_t l = 0; l < kLanes; ++l) xs[r][l] = a.x[r * a.x_stride + e + l];
    for (int b = 0; b < NB; ++b) {
      const W* wr = a.w + (j0 + b) * a.w_stride + e;
      float ws[kLanes];
      for (int64_t l = 0; l < kLanes; ++l) ws[l] = load(wr + l);
      for (int r = 0; r < R; ++r)
        for (int64_t l = 0; l < kLanes; ++l) acc[r][b][l] += xs[r][l] * ws[l];
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int b = 0; b < NB; ++b) {
      float s = 0;
      for (int64_t l = 0; l < kLanes; ++l) s += acc[r][b][l];
      const W* wr = a.w + (j0 + b) * a.w_stride;
      for (int64_t e = kv; e < a.k; ++e) s += a.x[r * a.x_stride + e] * load(wr + e);
      float& out = a.y[r * a.y_stride + j0 + b];
      out = a.beta == 0.0f ? a.alpha * s : a.alpha * s + a.beta * out;
    }
  }
}

template <int R, typename W>
__attribute__((always_inline)) inline void rows(const GemvArgs<W>& a, int64_t j0, int64_t j1) {
  int64_t j = j0;
  for (; j + kBlockRows <= j1; j += kBlockRows) block<R, kBlockRows>(a, j);
  for (; j < j1; ++j) block<R, 1>(a, j);
}

template <typename W>
__attribute__((always_inline)) inline void run(const GemvArgs<W>& a, int64_t j0, int64_t j1) {
  switch (a.rows) {
    case 1:
      return rows<1>(a, j0, j1);
    case 2:
      return rows<2>(a, j0, j1);
    case 3:
      return rows<3>(a, j0, j1);
    default:
      return rows<4>(a, j0, j1);
  }
}

// AVX-512: 16 floats per register, R x 4 accumulators kept in registers, bf16 widened by a
// shift. The portable loop above spills its accumulators; this one does not.
#define IP_AVX512 __attribute__((target("avx512f"), always_inline)) inline

IP_AVX512 __m512 load16(const float* p) {
  return _mm512_loadu_ps(p);
}
IP_AVX512 __m512 load16(const BFloat16* p) {
  __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

template <int R, int NB, typename W>
IP_AVX512 void block512(const GemvArgs<W>& a, int64_t j0) {
  __m512 acc[R][NB];
  for (int r = 0; r < R; ++r)
    for (int b = 0; b < NB; ++b) acc[r][b] = _mm512_setzero_ps();
  const int64_t kv = a.k - a.k % 16;
  for (int64_t e = 0; e < kv; e += 16) {
    __m512 xs[R];
    for (int r = 0; r < R; ++r) xs[r] = _mm512_loadu_ps(a.x + r * a.x_stride + e);
    for (int b = 0; b < NB; ++b) {
      // Each weight row is its own stream; fetching ahead keeps enough reads in flight.
      _mm_prefetch(reinterpret_cast<const char*>(a.w + (j0 + b) * a.w_stride + e + kPrefetch),
                   _MM_HINT_T0);
      const __m512 ws = load16(a.w + (j0 + b) * a.w_stride + e);
      for (int r = 0; r < R; ++r) acc[r][b] = _mm512_fmadd_ps(xs[r], ws, acc[r][b]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int b = 0; b < NB; ++b) {
      float s = _mm512_reduce_add_ps(acc[r][b]);
      const W* wr = a.w + (j0 + b) * a.w_stride;
      for (int64_t e = kv; e < a.k; ++e) s += a.x[r * a.x_stride + e] * load(wr + e);
      float& out = a.y[r * a.y_stride + j0 + b];
      out = a.beta == 0.0f ? a.alpha * s : a.alpha * s + a.beta * out;
    }
  }
}

template <int R, typename W>
__attribute__((target("avx512f"))) void rows512(const GemvArgs<W>& a, int64_t j0, int64_t j1) {
  int64_t j = j0;
  // One row of x: eight weight rows at a time (measured faster than four on this machine).
  constexpr int NB = R == 1 ? 8 : kBlockRows;
  for (; j + NB <= j1; j += NB) block512<R, NB>(a, j);
  for (; j < j1; ++j) block512<R, 1>(a, j);
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

// The portable loop compiled for AVX2 and for baseline x86-64 (explicit target attributes and a
// dispatch on the CPU's features; no ifunc, which sanitizers handle badly).
template <typename W>
__attribute__((target("avx2,fma"))) void run_avx2(const GemvArgs<W>& a, int64_t j0, int64_t j1) {
  run(a, j0, j1);
}
template <typename W>
void run_baseline(const GemvArgs<W>& a, int64_t j0, int64_t j1) {
  run(a, j0, j1);
}

const bool kHasAvx512 = __builtin_cpu_supports("avx512f");
const bool kHasAvx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");

template <typename W>
void dispatch(const GemvArgs<W>& a, int64_t j0, int64_t j1) {
  if (kHasAvx512) return run512(a, j0, j1);
  if (kHasAvx2) return run_avx2(a, j0, j1);
  run_baseline(a, j0, j1);
}

}  // namespace

void gemv(const GemvArgs<float>& a, int64_t n_begin, int64_t n_end) {
  dispatch(a, n_begin, n_end);
}

void gemv(const GemvArgs<BFloat16>& a, int64_t n_begin, int64_t n_end) {
  dispatch(a, n_begin, n_end);
}

template <typename W>
void gemv_parallel(const GemvArgs<W>& a) {
  ThreadPool* pool = current_thread_pool();
  // Below ~64K weights a job costs more to hand out than to run.
  if (pool == nullptr || pool->threads() < 2 || a.n * a.k < (1 << 16) || a.n < 8) {
    gemv(a, 0, a.n);
    return;
  }
  const int64_t tasks = pool->threads();
  const int64_t chunk = ((a.n + tasks - 1) / tasks + kBlockRows - 1) & ~(kBlockRows - 1);
  auto task = [&](int64_t t) {
    const int64_t begin = std::min(a.n, t * chunk), end = std::min(a.n, begin + chunk);
    if (begin < end) gemv(a, begin, end);
  };
  pool->parallel_for(tasks, task);
}
template void gemv_parallel(const GemvArgs<float>&);
template void gemv_parallel(const GemvArgs<BFloat16>&);

bool try_gemv(MatrixRef<const float> a, MatrixRef<const float> b, MatrixRef<float> c, float alpha,
              float beta) {
  const int64_t m = a.rows, k = a.cols, n = b.cols;
  if (m < 1 || m > kGemvMaxRows || k < 16 || n < 1) return false;
  if ((a.col_stride != 1) || (b.row_stride != 1 && k > 1) || (c.col_stride != 1 && n > 1))
    return false;
  const GemvArgs<float> args{a.data, a.row_stride, m,     b.data, b.col_stride, n, k,
                             c.data, c.row_stride, alpha, beta};
  gemv_parallel(args);
  return true;
}

}  // namespace inplace::cpu
