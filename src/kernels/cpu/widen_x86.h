// Weights widened to float32, one value or one vector register at a time, for the x86-64 vector
// kernels (gemv_x86.cpp, gemv_rows.cpp): bfloat16 by a 16-bit shift (a bfloat16 is a float's
// upper half), float16 by vcvtph2ps. Each vector load carries the smallest target it needs, so
// it inlines into any kernel compiled for that target or more.
#pragma once
#include <immintrin.h>

#include <bit>
#include <cstdint>

#include "core/half.h"

namespace inplace::cpu::x86 {

inline float widen(float v) {
  return v;
}
inline float widen(BFloat16 v) {
  return std::bit_cast<float>(uint32_t{v.bits} << 16);
}
inline float widen(Half v) {
  return static_cast<float>(v);
}

// 16 weights (AVX-512F).
#define IP_WIDEN_AVX512 __attribute__((target("avx512f"), always_inline)) inline
IP_WIDEN_AVX512 __m512 load16(const float* p) {
  return _mm512_loadu_ps(p);
}
IP_WIDEN_AVX512 __m512 load16(const BFloat16* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
IP_WIDEN_AVX512 __m512 load16(const Half* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
#undef IP_WIDEN_AVX512

// 8 weights (AVX2 and F16C).
#define IP_WIDEN_AVX2 __attribute__((target("avx2,f16c"), always_inline)) inline
IP_WIDEN_AVX2 __m256 load8(const float* p) {
  return _mm256_loadu_ps(p);
}
IP_WIDEN_AVX2 __m256 load8(const BFloat16* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
IP_WIDEN_AVX2 __m256 load8(const Half* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
#undef IP_WIDEN_AVX2

}  // namespace inplace::cpu::x86
