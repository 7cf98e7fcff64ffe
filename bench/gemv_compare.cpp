// Decode GEMV on this machine: y[1, n] = x[1, k] @ W^T for the small model's linear shapes, with
// W [n, k] row-major, through OpenBLAS sgemm (what the engine used before), OpenBLAS sgemv,
// oneDNN's dnnl_sgemm (when built with it) and inplace's own kernel (kernels/cpu/gemv.h, f32
// and bf16 weights). Weights cycle through more matrices than the caches hold, so every call
// reads from memory, as a decode step does. Prints GB/s of weight bytes read, one thread.
//
//   build/bench/gemv_compare [reps]     (prints the best of reps passes)
#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cpu/gemv.h"
#ifdef INPLACE_HAVE_DNNL
#include <dnnl.h>
#endif

using inplace::BFloat16;
using inplace::cpu::GemvArgs;

int main(int argc, char** argv) {
  openblas_set_num_threads(1);
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  struct Shape {
    int64_t n, k;
  };
  const Shape shapes[] = {{512, 512}, {1408, 512}, {512, 1408}, {8192, 512}};
  for (const Shape& s : shapes) {
    const int64_t n = s.n, k = s.k;
    const int64_t copies = std::max<int64_t>(2, (256 << 20) / (n * k * 4));  // 256 MB of weights
    std::vector<float> w(static_cast<size_t>(copies * n * k)), x(static_cast<size_t>(k)),
        y(static_cast<size_t>(n));
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 13) * 0.01f;
    std::vector<BFloat16> wb(w.begin(), w.end());
    for (int64_t i = 0; i < k; ++i) x[static_cast<size_t>(i)] = 0.001f * static_cast<float>(i);
    // The best of `reps` passes over every copy (a busy machine slows some passes down).
    auto time = [&](const char* name, double bytes_per_elem, auto&& f) {
      f(0);
      double best = 1e30;
      for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int64_t c = 0; c < copies; ++c) f(c);
        best = std::min(
            best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      const double bytes = bytes_per_elem * static_cast<double>(n * k) * copies;
      std::printf("  %-22s %6.2f GB/s  %8.1f us per call\n", name, bytes / best / 1e9,
                  best / copies * 1e6);
    };
    std::printf("[1 x %lld] @ [%lld x %lld]^T\n", (long long)k, (long long)n, (long long)k);
    volatile float sink = 0;
    time("read bandwidth (sum)", 4, [&](int64_t c) {
      float part[16] = {};
      const float* p = w.data() + c * n * k;
      for (int64_t i = 0; i + 16 <= n * k; i += 16)
        for (int l = 0; l < 16; ++l) part[l] += p[i + l];
      sink = sink + part[0] + part[15];
    });
    time("openblas sgemm", 4, [&](int64_t c) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, 1, n, k, 1.f, x.data(), k,
                  w.data() + c * n * k, k, 0.f, y.data(), n);
    });
    time("openblas sgemv", 4, [&](int64_t c) {
      cblas_sgemv(CblasRowMajor, CblasNoTrans, n, k, 1.f, w.data() + c * n * k, k, x.data(), 1, 0.f,
                  y.data(), 1);
    });
#ifdef INPLACE_HAVE_DNNL
    time("onednn sgemm", 4, [&](int64_t c) {
      dnnl_sgemm('N', 'T', 1, n, k, 1.f, x.data(), k, w.data() + c * n * k, k, 0.f, y.data(), n);
    });
#endif
    time("inplace gemv f32", 4, [&](int64_t c) {
      inplace::cpu::gemv(
          GemvArgs<float>{x.data(), k, 1, w.data() + c * n * k, k, n, k, y.data(), n}, 0, n);
    });
    time("inplace portable f32", 4, [&](int64_t c) {
      inplace::cpu::gemv_portable(
          GemvArgs<float>{x.data(), k, 1, w.data() + c * n * k, k, n, k, y.data(), n}, 0, n);
    });
    time("inplace gemv bf16", 2, [&](int64_t c) {
      inplace::cpu::gemv(
          GemvArgs<BFloat16>{x.data(), k, 1, wb.data() + c * n * k, k, n, k, y.data(), n}, 0, n);
    });
  }
}
