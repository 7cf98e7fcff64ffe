// Decode GEMV: the dispatch, the column split among threads, and the portable loop (CPUs without
// AVX2; the vector kernels are in gemv_x86.cpp). Lanes accumulate independently (kLanes partial
// sums per output), so the inner loops vectorise without reassociating float adds; the lanes are
// summed once per output.
#include "kernels/cpu/gemv.h"

#include "core/thread_pool.h"
#include "kernels/cpu/gemv_x86.h"

#include <cpuid.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

namespace inplace::cpu {

namespace {

constexpr int64_t kLanes = 16;  // one AVX-512 register of floats, two AVX2 ones
constexpr int64_t kBlockRows = 4;
constexpr int64_t kChunksPerThread = 4;  // gemv_parallel's chunks per thread (large products)

inline float load(const float* p) {
  return *p;
}
inline float load(const BFloat16* p) {
  return std::bit_cast<float>(uint32_t{p->bits} << 16);
}
inline float load(const Half* p) {
  return static_cast<float>(*p);
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

// The vector kernels (gemv_x86.h) by the CPU's features (explicit target attributes and a
// dispatch; no ifunc, which sanitizers handle badly); the portable loop elsewhere.
const bool kHasAvx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("fma");
// F16C by cpuid: clang's __builtin_cpu_supports does not know it.
bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}
const bool kHasAvx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();

// float32 weights take the AVX2 kernel even where AVX-512 is present: streamed with 32-byte
// loads it read memory 1.4x faster than with 64-byte loads on the development machine (AMD EPYC,
// Zen 5; bench/gemv_compare). bfloat16 weights are loaded 32 bytes at a time by both; AVX-512
// widens them in one register.
void dispatch(const GemvArgs<float>& a, int64_t j0, int64_t j1) {
  if (kHasAvx2) return x86::gemv_avx2(a, j0, j1);
  run(a, j0, j1);
}
// Half weights (bfloat16, float16) alike.
template <typename W>
void dispatch(const GemvArgs<W>& a, int64_t j0, int64_t j1) {
  if (kHasAvx512) return x86::gemv_avx512(a, j0, j1);
  if (kHasAvx2) return x86::gemv_avx2(a, j0, j1);
  run(a, j0, j1);
}

}  // namespace

namespace x86 {
bool avx2_supported() {
  return kHasAvx2;
}
bool avx512_supported() {
  return kHasAvx512;
}
}  // namespace x86

void gemv(const GemvArgs<float>& a, int64_t n_begin, int64_t n_end) {
  dispatch(a, n_begin, n_end);
}

void gemv(const GemvArgs<BFloat16>& a, int64_t n_begin, int64_t n_end) {
  dispatch(a, n_begin, n_end);
}

void gemv(const GemvArgs<Half>& a, int64_t n_begin, int64_t n_end) {
  dispatch(a, n_begin, n_end);
}

void gemv_portable(const GemvArgs<float>& a, int64_t n_begin, int64_t n_end) {
  run(a, n_begin, n_end);
}

void gemv_portable(const GemvArgs<BFloat16>& a, int64_t n_begin, int64_t n_end) {
  run(a, n_begin, n_end);
}

void gemv_portable(const GemvArgs<Half>& a, int64_t n_begin, int64_t n_end) {
  run(a, n_begin, n_end);
}

template <typename W>
void gemv_parallel(const GemvArgs<W>& a) {
  ThreadPool* pool = current_thread_pool();
  // Below ~64K weights a job costs more to hand out than to run.
  if (pool == nullptr || pool->threads() < 2 || a.n * a.k < (1 << 16) || a.n < 8) {
    gemv(a, 0, a.n);
    return;
  }
  // A few chunks per thread, taken in turn: a thread that starts late (woken from sleep, or
  // sharing its core with another process) takes fewer, instead of holding the others up.
  const int64_t per_thread = a.n * a.k >= (1 << 20) ? kChunksPerThread : 1;
  const int64_t tasks = pool->threads() * per_thread;
  const int64_t chunk = ((a.n + tasks - 1) / tasks + kBlockRows - 1) & ~(kBlockRows - 1);
  auto task = [&](int64_t t) {
    const int64_t begin = std::min(a.n, t * chunk), end = std::min(a.n, begin + chunk);
    if (begin < end) gemv(a, begin, end);
  };
  pool->parallel_for(tasks, task);
}
template void gemv_parallel(const GemvArgs<float>&);
template void gemv_parallel(const GemvArgs<BFloat16>&);
template void gemv_parallel(const GemvArgs<Half>&);

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

template <typename T>
bool try_gemv_half(MatrixRef<const T> a, MatrixRef<const T> b, MatrixRef<T> c, float alpha,
                   float beta) {
  const int64_t m = a.rows, k = a.cols, n = b.cols;
  if (m < 1 || m > kGemvMaxRows || k < 16 || n < 1 || (b.row_stride != 1 && k > 1)) return false;
  // x widened and the float results, in this thread's scratch (grown, never freed: a decode
  // step's products allocate nothing).
  thread_local std::vector<float> x, y;
  if (x.size() < static_cast<size_t>(m * k)) x.resize(static_cast<size_t>(m * k));
  if (y.size() < static_cast<size_t>(m * n)) y.resize(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      x[i * k + p] = static_cast<float>(a.data[i * a.row_stride + p * a.col_stride]);
  gemv_parallel(GemvArgs<T>{x.data(), k, m, b.data, b.col_stride, n, k, y.data(), n});
  const bool read_c = beta != 0.0f;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T& out = c.data[i * c.row_stride + j * c.col_stride];
      float r = alpha * y[i * n + j];
      if (read_c) r += beta * static_cast<float>(out);
      out = static_cast<T>(r);
    }
  return true;
}
template bool try_gemv_half(MatrixRef<const BFloat16>, MatrixRef<const BFloat16>,
                            MatrixRef<BFloat16>, float, float);
template bool try_gemv_half(MatrixRef<const Half>, MatrixRef<const Half>, MatrixRef<Half>, float,
                            float);

}  // namespace inplace::cpu
