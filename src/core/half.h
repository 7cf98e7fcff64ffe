// float16 and bfloat16 storage types; arithmetic goes through float, as PyTorch's CPU kernels do.
#pragma once
#include <cstdint>
#include <cstring>

namespace inplace {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(from_float(f)) {}  // NOLINT: implicit like c10::Half
  operator float() const { return to_float(bits); }

  static uint16_t from_float(float f) {
    uint32_t x = float_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t mant = x & 0x007fffffu;
    int32_t exp = static_cast<int32_t>((x >> 23) & 0xffu);
    if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
    int32_t e = exp - 127 + 15;
    if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);
    if (e <= 0) {
      if (e < -10) return static_cast<uint16_t>(sign);
      mant |= 0x00800000u;
      uint32_t shift = static_cast<uint32_t>(14 - e);
      uint32_t half_mant = mant >> shift;
      uint32_t rem = mant & ((1u << shift) - 1u);
      uint32_t halfway = 1u << (shift - 1);
      if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
      return static_cast<uint16_t>(sign | half_mant);
    }
    uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
      ++half;  // may carry into exponent: correct
    return static_cast<uint16_t>(half);
  }
  static float to_float(uint16_t h) {
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
      if (mant == 0) return bits_float(sign);
      float v = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
      return sign ? -v : v;
    }
    if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
    return bits_float(sign | ((exp + 127 - 15) << 23) | (mant << 13));
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(from_float(f)) {}  // NOLINT: implicit like c10::BFloat16
  operator float() const { return bits_float(static_cast<uint32_t>(bits) << 16); }

  static uint16_t from_float(float f) {
    uint32_t x = float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
    uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding) >> 16);
  }
};

}  // namespace inplace
