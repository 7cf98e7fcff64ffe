// The arithmetic of sampling a token, shared by the host (program/sampler.cpp, the cpu kernel of
// sample_row) and the device (kernels/cuda/sample_row.cu), so that a device's draw is the host's
// bit for bit. A token's weight is an integer: floor(2^42 * exp((x - top) / temperature)) by a
// fixed sequence of correctly rounded double operations (fma, not the library's exp, whose last
// bit differs between libm and CUDA), 2^42 for the row's largest logit itself. Sums of weights
// are then exact in any order, so a reduction over thousands of threads and a loop on the host
// meet the same totals, prefixes and thresholds. A token whose probability is below 2^-42 of the
// most likely one's has weight 0 and is never drawn. docs/programs.md ("Sampling").
#pragma once
#include <cstdint>
#include <cstring>

#include <cmath>

#ifdef __CUDACC__
#define INPLACE_SAMPLING_HD __host__ __device__
#else
#define INPLACE_SAMPLING_HD
#endif

namespace inplace::sampling {

inline constexpr int kWeightBits = 42;
inline constexpr int64_t kWeightOne = int64_t{1} << kWeightBits;  // the largest logit's weight
// Rows of at most 2^20 tokens: a total of weights stays below 2^62.
inline constexpr int64_t kMaxTokens = int64_t{1} << 20;
// A draw is a uniform integer in [0, 2^53): the top 53 bits of one std::mt19937_64 output.
inline constexpr int kDrawBits = 53;

namespace detail {

INPLACE_SAMPLING_HD inline double fma(double a, double b, double c) {
#ifdef __CUDA_ARCH__
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

INPLACE_SAMPLING_HD inline double floor(double x) {
#ifdef __CUDA_ARCH__
  return ::floor(x);
#else
  return std::floor(x);
#endif
}

// 2^e for 0 <= e <= 1023, from its bits.
INPLACE_SAMPLING_HD inline double pow2(int e) {
  const uint64_t bits = static_cast<uint64_t>(1023 + e) << 52;
#ifdef __CUDA_ARCH__
  return __longlong_as_double(static_cast<long long>(bits));
#else
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
#endif
}

}  // namespace detail

// The weight of logit x in a row whose largest logit is `top` (x <= top, neither NaN), at
// temperature t > 0: in [0, kWeightOne].
INPLACE_SAMPLING_HD inline int64_t weight(double x, double top, double t) {
  if (x == top) return kWeightOne;  // the largest itself, +inf included
#ifdef __CUDA_ARCH__
  const double y = __ddiv_rn(__dsub_rn(x, top), t);
#else
  const double y = (x - top) / t;
#endif
  if (!(y > -30.0)) return 0;  // 2^42 * exp(-30) < 1 (and -inf, -inf - top)
  // exp(y) = 2^k * exp(r), |r| <= ln2 / 2 (Cody-Waite), exp(r) by its Taylor series to r^11.
  const double k = detail::floor(detail::fma(y, 1.4426950408889634, 0.5));  // -43 <= k <= 0
  double r = detail::fma(-k, 6.93147180369123816490e-01, y);
  r = detail::fma(-k, 1.90821492927058770002e-10, r);
  constexpr double c[] = {1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320,
                          1.0 / 5040,     1.0 / 720,     1.0 / 120,    1.0 / 24,
                          1.0 / 6,        0.5,           1.0,          1.0};
  double p = c[0];
  for (int i = 1; i < 12; ++i) p = detail::fma(p, r, c[i]);
  const int e = static_cast<int>(k) + kWeightBits;  // >= 0: k >= -43 > -kWeightBits - 1
#ifdef __CUDA_ARCH__
  const double scaled = __dmul_rn(p, detail::pow2(e));
#else
  const double scaled = p * detail::pow2(e);  // exact: a power of two
#endif
  const int64_t w = static_cast<int64_t>(detail::floor(scaled));
  return w < kWeightOne ? w : kWeightOne;
}

// The place of a draw in [0, total): floor(draw * total / 2^53), exactly.
INPLACE_SAMPLING_HD inline uint64_t scaled_draw(uint64_t draw, uint64_t total) {
#ifdef __CUDA_ARCH__
  const uint64_t hi = __umul64hi(draw, total), lo = draw * total;
#else
  const unsigned __int128 product = static_cast<unsigned __int128>(draw) * total;
  const uint64_t hi = static_cast<uint64_t>(product >> 64), lo = static_cast<uint64_t>(product);
#endif
  return (hi << (64 - kDrawBits)) | (lo >> kDrawBits);
}

// What sample_row gives: the token drawn, the row's total weight, and the first NaN's index
// (-1: none; then token is -1 and total 0).
struct RowDraw {
  int64_t token = -1, total = 0, first_nan = -1;
};

#ifndef __CUDACC__
// Host versions (sampling_weight.cpp), by fused multiply-add instructions where the processor
// has them (the same roundings as std::fma's, at a fraction of a call's cost).
// w[i] = weight(x[i], top, t) for i < n.
void weights(const double* x, int64_t n, double top, double t, int64_t* w);
// sample_row's definition: over the row's n logits in index order, the token at the draw's
// place among their weights (the first whose running sum exceeds scaled_draw(draw, total)).
// A device computes the same sums in parallel (exact integers).
RowDraw draw_in_order(const double* x, int64_t n, double temperature, uint64_t draw);
#endif

}  // namespace inplace::sampling
