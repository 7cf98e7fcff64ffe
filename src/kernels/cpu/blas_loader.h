// OpenBLAS, loaded on first use rather than linked: loading it costs every process about 4 MiB
// of resident memory at start-up (its relocations, its threads), and a process that only
// decodes never calls it (decode's products are kernels/cpu/gemv). The products it serves
// (float32/float64 with more than kGemvMaxRows rows: prompts, large matrices) call it through
// this table.
#pragma once
#include <string>
#include <vector>

namespace inplace::cpu {

// CBLAS's values (checked against cblas.h where the table is loaded).
enum BlasLayout : int { kBlasRowMajor = 101 };
enum BlasTranspose : int { kBlasNoTrans = 111, kBlasTrans = 112 };

// cblas_{s,d}gemm and openblas_set_num_threads (32-bit integers: OpenBLAS's default build).
struct Blas {
  void (*sgemm)(BlasLayout, BlasTranspose, BlasTranspose, int m, int n, int k, float alpha,
                const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);
  void (*dgemm)(BlasLayout, BlasTranspose, BlasTranspose, int m, int n, int k, double alpha,
                const double* a, int lda, const double* b, int ldb, double beta, double* c,
                int ldc);
  void (*set_num_threads)(int);
};

// The names tried, in order: $INPLACE_OPENBLAS when set, libopenblas.so.0, libopenblas.so, then
// the library the build found.
std::vector<std::string> blas_library_names();
// Opens the first of `names` that loads and takes its symbols; an error naming every one tried
// (and the loader's reason) when none does. Not cached: blas() is.
Blas load_blas(const std::vector<std::string>& names);
// Loads OpenBLAS once (thread-safe); the error above when it cannot, and again on the next call.
const Blas& blas();
// Whether blas() has loaded the library (a process that never needed it has not).
bool blas_loaded();
// The thread count OpenBLAS should use: applied now when it is loaded, else when it loads.
void set_blas_threads(int threads);

}  // namespace inplace::cpu
