// A branch-free float exp the compiler can vectorise (Cody-Waite range reduction and Cephes'
// minimax polynomial, within ~1 ulp of expf) for softmax-style arguments x <= 0. Results below
// FLT_MIN flush to 0, arguments above ~88.3 give inf, NaN propagates. Special cases are blended in
// with bit masks and the exponent is taken from the bits of the rounding add: any select or
// float->int conversion on a clamped value lets the compiler branch and give up vectorising.
#pragma once
#include <cstdint>
#include <cstring>

namespace inplace::cpu {

inline uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
inline float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

inline float exp_vectorizable(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kMin = -87.33654f, kMax = 88.72283f;  // ln(FLT_MIN), ln(FLT_MAX)
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const uint32_t keep = 0u - static_cast<uint32_t>((x >= kMin) & (x <= kMax));
  const uint32_t over = 0u - static_cast<uint32_t>(x > kMax);
  const uint32_t nan = 0u - static_cast<uint32_t>(x != x);
  const float t = x * kLog2e + kRound;
  const float n = t - kRound;
  // t's low mantissa bits hold n (two's complement, biased by kRound's bits).
  const uint32_t n_bits = float_to_bits(t) - float_to_bits(kRound);
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const float e = p * bits_to_float((n_bits + 127u) << 23);
  return bits_to_float((float_to_bits(e) & keep) | (0x7f800000u & over) | (float_to_bits(x) & nan));
}

}  // namespace inplace::cpu
