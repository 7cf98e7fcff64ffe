// The read bandwidth behind `inplace bench`'s floor: a plain streaming read, as fast as this
// machine does one. Each pass sums a buffer far larger than the last-level cache, split into one
// contiguous share per thread; vector sums with four independent accumulators, with 32-byte
// (AVX2) and 64-byte (AVX-512) loads where the CPU has them; the best of eight passes of every kind
// counts.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "core/thread_pool.h"
#include "measure.h"

namespace inplace::cli {

namespace {

// Independent lanes vectorise without reassociation (the baseline where nothing else runs).
float sum_portable(const float* p, int64_t n) {
  float part[32] = {};
  for (int64_t i = 0; i + 32 <= n; i += 32)
    for (int l = 0; l < 32; ++l) part[l] += p[i + l];
  float s = 0;
  for (float v : part) s += v;
  return s;
}

__attribute__((target("avx2"))) float sum_avx2(const float* p, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(p + i + 24));
  }
  float t[8];
  _mm256_storeu_ps(t, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}

__attribute__((target("avx512f"))) float sum_avx512(const float* p, int64_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(p + i + 48));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

using SumFn = float (*)(const float*, int64_t);

}  // namespace

double measure_read_bandwidth(int64_t bytes, int threads) {
  const int64_t n = bytes / 4 / 64 * 64;
  std::vector<float> buf(static_cast<size_t>(n), 1.0f);
  std::vector<SumFn> kinds = {&sum_portable};
  if (__builtin_cpu_supports("avx2")) kinds.push_back(&sum_avx2);
  if (__builtin_cpu_supports("avx512f")) kinds.push_back(&sum_avx512);
  ThreadPool pool(std::max(threads, 1));
  const int64_t share = (n / pool.threads()) / 64 * 64;
  std::vector<float> sums(static_cast<size_t>(pool.threads()));
  double best = 0;
  for (int rep = 0; rep < 8; ++rep) {
    for (SumFn sum : kinds) {
      auto task = [&](int64_t t) {
        sums[static_cast<size_t>(t)] = sum(buf.data() + t * share, share);
      };
      const int64_t t0 = now_ns();
      pool.parallel_for(pool.threads(), task);
      const double s = static_cast<double>(now_ns() - t0) / 1e9;
      best = std::max(best, static_cast<double>(share * pool.threads() * 4) / s);
    }
  }
  volatile float sink = sums[0];
  (void)sink;
  return best;
}

}  // namespace inplace::cli
