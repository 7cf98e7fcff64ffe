// The vector GEMV kernels behind kernels/cpu/gemv.h, for x86-64 CPUs with AVX-512 or AVX2+FMA
// (compiled with target attributes; gemv.cpp picks one from the CPU's features).
//
// Each weight row is read once, start to end, before the next: the matrix is streamed in address
// order, one stream, which the hardware prefetchers follow at the machine's read bandwidth.
// (Eight rows read side by side, eight streams 2-6 KB apart, ran at about 60% of it on the
// development machine.) Four accumulators per row of x keep the FMAs independent; bfloat16
// weights are widened to float32 in registers by a 16-bit shift, float16 ones by F16C's vcvtph2ps
// (half the bytes read). The AVX2 kernels are compiled for AVX2, FMA and F16C.
// gemv.cpp's dispatch says which one runs where.
#pragma once
#include <cstdint>

#include "kernels/cpu/gemv.h"

namespace inplace::cpu::x86 {

// Whether this CPU runs the kernels below (AVX2 + FMA + F16C; AVX-512 F and BW + FMA): what
// gemv.cpp dispatches on.
bool avx2_supported();
bool avx512_supported();

// Output columns [j0, j1) of the product; a.rows <= kGemvMaxRows.
void gemv_avx512(const GemvArgs<float>& a, int64_t j0, int64_t j1);
void gemv_avx512(const GemvArgs<BFloat16>& a, int64_t j0, int64_t j1);
void gemv_avx2(const GemvArgs<float>& a, int64_t j0, int64_t j1);
void gemv_avx2(const GemvArgs<BFloat16>& a, int64_t j0, int64_t j1);
void gemv_avx512(const GemvArgs<Half>& a, int64_t j0, int64_t j1);
void gemv_avx2(const GemvArgs<Half>& a, int64_t j0, int64_t j1);

}  // namespace inplace::cpu::x86
