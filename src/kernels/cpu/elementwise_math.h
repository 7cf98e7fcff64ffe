// The math of the elementwise CPU kernels, one functor per op over opmath values (float for half
// types), shared by the unfused kernels (elementwise_binary.cpp, elementwise_unary.cpp) and the
// fused_pointwise interpreter (fused_pointwise.cpp) so both round alike. Each *_functor calls
// use(f) with the op's functor for element type T and returns false, calling nothing, when the op
// does not run on T. Integer division by zero is the caller's check.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <type_traits>

#include "core/dtype.h"
#include "core/scalar.h"
#include "kernels/cpu/reduction_exp.h"
#include "ops/elementwise_codes.h"

namespace inplace::cpu::math {

template <typename M>
constexpr bool kSignedInt = std::is_integral_v<M>&& std::is_signed_v<M>;
template <typename M>
constexpr bool kInt = std::is_integral_v<M> && !std::is_same_v<M, bool>;

// Integer arithmetic wraps like the hardware does (signed overflow is undefined in C++).
template <typename M>
M add_wrap(M a, M b) {
  if constexpr (kInt<M>) {
    using U = std::make_unsigned_t<M>;
    return static_cast<M>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename M>
M sub_wrap(M a, M b) {
  if constexpr (kInt<M>) {
    using U = std::make_unsigned_t<M>;
    return static_cast<M>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return a - b;
  }
}
template <typename M>
M mul_wrap(M a, M b) {
  if constexpr (kInt<M>) {
    // At least unsigned int: narrower unsigned types promote to (signed) int and overflow.
    using U = std::conditional_t<(sizeof(M) < sizeof(unsigned)), unsigned, std::make_unsigned_t<M>>;
    return static_cast<M>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

// Integer division; b != 0 was checked. b == -1 is special-cased because INT_MIN / -1 traps.
template <typename M>
M div_trunc_int(M a, M b) {
  if constexpr (kSignedInt<M>) {
    if (b == -1) return sub_wrap<M>(0, a);
  }
  return static_cast<M>(a / b);
}
template <typename M>
M div_floor_int(M a, M b) {
  if constexpr (kSignedInt<M>) {
    if (b == -1) return sub_wrap<M>(0, a);
    const M q = static_cast<M>(a / b), r = static_cast<M>(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<M>(q - 1) : q;
  } else {
    return static_cast<M>(a / b);
  }
}
template <typename M>
M remainder_int(M a, M b) {
  if constexpr (kSignedInt<M>) {
    if (b == -1) return 0;
    M r = static_cast<M>(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<M>(r + b) : r;
  } else {
    return static_cast<M>(a % b);
  }
}
template <typename M>
M fmod_int(M a, M b) {
  if constexpr (kSignedInt<M>) {
    if (b == -1) return 0;
  }
  return static_cast<M>(a % b);
}

// c10::div_floor_floating: floor of the exact quotient, not of the rounded one.
template <typename M>
M div_floor_float(M a, M b) {
  if (b == 0) return a / b;
  M mod = std::fmod(a, b);
  M div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= M(1);
  if (div == 0) return std::copysign(M(0), a / b);
  M floordiv = std::floor(div);
  if (div - floordiv > M(0.5)) floordiv += M(1);
  return floordiv;
}
template <typename M>
M remainder_float(M a, M b) {
  M mod = std::fmod(a, b);
  if (mod != 0 && (b < 0) != (mod < 0)) mod += b;
  return mod;
}

// torch's powi: exponentiation by squaring; negative exponents give 0 except for bases +-1.
template <typename M>
M powi(M a, M b) {
  if constexpr (kSignedInt<M>) {
    if (b < 0) {
      if (a == 1) return 1;
      if (a == -1) return (b % 2) ? M(-1) : M(1);
      return 0;
    }
  }
  M result = 1;
  while (b) {
    if (b & 1) result = mul_wrap(result, a);
    b = static_cast<M>(b / 2);
    a = mul_wrap(a, a);
  }
  return result;
}

template <typename M>
M maximum(M a, M b) {
  if constexpr (std::is_floating_point_v<M>) {
    if (a != a || b != b) return std::numeric_limits<M>::quiet_NaN();
  }
  return a < b ? b : a;
}
template <typename M>
M minimum(M a, M b) {
  if constexpr (std::is_floating_point_v<M>) {
    if (a != a || b != b) return std::numeric_limits<M>::quiet_NaN();
  }
  return b < a ? b : a;
}

template <typename M>
M neg_wrap(M x) {
  if constexpr (std::is_integral_v<M>) {
    using U = std::make_unsigned_t<M>;
    return static_cast<M>(static_cast<U>(U(0) - static_cast<U>(x)));
  } else {
    return -x;
  }
}

template <typename T, typename Use>
bool binary_functor(BinaryOp op, Scalar alpha, Use&& use) {
  using M = opmath_t<T>;
  constexpr bool kFloat = kIsFloat<T>;
  constexpr bool kBool = std::is_same_v<T, bool>;
  const bool unit_alpha = alpha.to_double() == 1.0;
  switch (op) {
    case BinaryOp::kAdd:
      if constexpr (kBool) {
        const bool al = alpha.to_bool();
        return use([al](bool p, bool q) { return p || (al && q); }), true;
      } else {
        if (unit_alpha) return use([](M p, M q) { return add_wrap(p, q); }), true;
        const M al = alpha.to<M>();
        return use([al](M p, M q) { return add_wrap(p, mul_wrap(al, q)); }), true;
      }
    case BinaryOp::kSub:
      if constexpr (kBool) {
        return false;
      } else {
        if (unit_alpha) return use([](M p, M q) { return sub_wrap(p, q); }), true;
        const M al = alpha.to<M>();
        return use([al](M p, M q) { return sub_wrap(p, mul_wrap(al, q)); }), true;
      }
    case BinaryOp::kMul:
      if constexpr (kBool)
        return use([](bool p, bool q) { return p && q; }), true;
      else
        return use([](M p, M q) { return mul_wrap(p, q); }), true;
    case BinaryOp::kDiv:
      if constexpr (kFloat)
        return use([](M p, M q) { return p / q; }), true;
      else
        return false;
    case BinaryOp::kDivTrunc:
      if constexpr (kFloat) {
        return use([](M p, M q) { return std::trunc(p / q); }), true;
      } else if constexpr (kInt<T>) {
        return use([](M p, M q) { return div_trunc_int(p, q); }), true;
      } else {
        return false;
      }
    case BinaryOp::kDivFloor:
      if constexpr (kFloat) {
        return use([](M p, M q) { return div_floor_float(p, q); }), true;
      } else if constexpr (kInt<T>) {
        return use([](M p, M q) { return div_floor_int(p, q); }), true;
      } else {
        return false;
      }
    case BinaryOp::kRemainder:
      if constexpr (kFloat) {
        return use([](M p, M q) { return remainder_float(p, q); }), true;
      } else if constexpr (kInt<T>) {
        return use([](M p, M q) { return remainder_int(p, q); }), true;
      } else {
        return false;
      }
    case BinaryOp::kFmod:
      if constexpr (kFloat) {
        return use([](M p, M q) { return std::fmod(p, q); }), true;
      } else if constexpr (kInt<T>) {
        return use([](M p, M q) { return fmod_int(p, q); }), true;
      } else {
        return false;
      }
    case BinaryOp::kPow:
      if constexpr (kFloat)
        return use([](M p, M q) { return std::pow(p, q); }), true;
      else if constexpr (kInt<T>)
        return use([](M p, M q) { return powi(p, q); }), true;
      else
        return false;
    case BinaryOp::kMaximum:
      if constexpr (kBool)
        return use([](bool p, bool q) { return p || q; }), true;
      else
        return use([](M p, M q) { return maximum(p, q); }), true;
    case BinaryOp::kMinimum:
      if constexpr (kBool)
        return use([](bool p, bool q) { return p && q; }), true;
      else
        return use([](M p, M q) { return minimum(p, q); }), true;
    case BinaryOp::kBitwiseAnd:
      if constexpr (kBool)
        return use([](bool p, bool q) { return p && q; }), true;
      else if constexpr (kInt<T>)
        return use([](M p, M q) { return static_cast<M>(p & q); }), true;
      else
        return false;
    case BinaryOp::kBitwiseOr:
      if constexpr (kBool)
        return use([](bool p, bool q) { return p || q; }), true;
      else if constexpr (kInt<T>)
        return use([](M p, M q) { return static_cast<M>(p | q); }), true;
      else
        return false;
    case BinaryOp::kBitwiseXor:
      if constexpr (kBool)
        return use([](bool p, bool q) { return p != q; }), true;
      else if constexpr (kInt<T>)
        return use([](M p, M q) { return static_cast<M>(p ^ q); }), true;
      else
        return false;
  }
  return false;
}

template <typename T, typename Use>
bool unary_functor(UnaryOp op, Use&& use) {
  using M = opmath_t<T>;
  constexpr bool kFloat = kIsFloat<T>;
  constexpr bool kBool = std::is_same_v<T, bool>;
  constexpr bool kInt = std::is_integral_v<T> && !kBool;
  // The float-only functions; integer inputs were promoted to a float result by the op layer.
  auto use_float = [&](auto f) {
    if constexpr (kFloat) {
      use(f);
      return true;
    } else {
      return false;
    }
  };
  switch (op) {
    case UnaryOp::kNeg:
      if constexpr (kBool)
        return false;
      else
        return use([](M x) { return neg_wrap(x); }), true;
    case UnaryOp::kAbs:
      if constexpr (kBool)
        return false;
      else if constexpr (std::is_unsigned_v<M>)
        return use([](M x) { return x; }), true;
      else
        return use([](M x) { return x < 0 ? neg_wrap(x) : x; }), true;
    case UnaryOp::kRelu:
      if constexpr (kBool)
        return false;
      else
        return use([](M x) { return x < 0 ? M(0) : x; }), true;  // NaN stays NaN
    case UnaryOp::kSqrt:
      return use_float([](M x) { return std::sqrt(x); });
    case UnaryOp::kRsqrt:
      return use_float([](M x) { return M(1) / std::sqrt(x); });
    case UnaryOp::kExp:
      return use_float([](M x) { return std::exp(x); });
    case UnaryOp::kLog:
      return use_float([](M x) { return std::log(x); });
    case UnaryOp::kLog2:
      return use_float([](M x) { return std::log2(x); });
    case UnaryOp::kLog1p:
      return use_float([](M x) { return std::log1p(x); });
    case UnaryOp::kExpm1:
      return use_float([](M x) { return std::expm1(x); });
    case UnaryOp::kSin:
      return use_float([](M x) { return std::sin(x); });
    case UnaryOp::kCos:
      return use_float([](M x) { return std::cos(x); });
    case UnaryOp::kTan:
      return use_float([](M x) { return std::tan(x); });
    case UnaryOp::kTanh:
      return use_float([](M x) { return std::tanh(x); });
    case UnaryOp::kErf:
      return use_float([](M x) { return std::erf(x); });
    case UnaryOp::kSigmoid:
      return use_float([](M x) { return M(1) / (M(1) + std::exp(-x)); });
    case UnaryOp::kSilu:
      // float32 by the exp of silu_f32 (the contiguous path), so every layout and a fused
      // chain give its values.
      if constexpr (std::is_same_v<T, float>)
        return use_float([](M x) { return x / (M(1) + exp_vectorizable(-x)); });
      return use_float([](M x) { return x / (M(1) + std::exp(-x)); });
    case UnaryOp::kReciprocal:
      return use_float([](M x) { return M(1) / x; });
    case UnaryOp::kHardswish:  // as torch's cpu kernel: NaN stays NaN
      return use_float([](M x) {
        const M t = static_cast<M>(x + M(3));
        return static_cast<M>(x * std::min<M>(std::max<M>(t, M(0)), M(6)) / M(6));
      });
    case UnaryOp::kGelu:
      if constexpr (kFloat) {
        return use([](M x) {
                 constexpr M kInvSqrt2 = M(1) / std::numbers::sqrt2_v<M>;
                 return x * M(0.5) * (M(1) + std::erf(x * kInvSqrt2));
               }),
               true;
      } else {
        return false;
      }
    case UnaryOp::kGeluTanh:
      if constexpr (kFloat) {
        return use([](M x) {
                 // sqrt(2 / pi), as torch's kBeta = M_SQRT2 * M_2_SQRTPI * 0.5
                 constexpr M kBeta = std::numbers::sqrt2_v<M> * std::numbers::inv_sqrtpi_v<M>;
                 constexpr M kKappa = M(0.044715);
                 const M inner = kBeta * (x + kKappa * x * x * x);
                 return M(0.5) * x * (M(1) + std::tanh(inner));
               }),
               true;
      } else {
        return false;
      }
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kRound:
    case UnaryOp::kTrunc:
      if constexpr (kFloat) {
        if (op == UnaryOp::kFloor) return use([](M x) { return std::floor(x); }), true;
        if (op == UnaryOp::kCeil) return use([](M x) { return std::ceil(x); }), true;
        if (op == UnaryOp::kRound) return use([](M x) { return std::nearbyint(x); }), true;
        return use([](M x) { return std::trunc(x); }), true;
      } else if constexpr (kInt) {
        return use([](M x) { return x; }), true;  // integers are already whole
      } else {
        return false;
      }
    case UnaryOp::kBitwiseNot:
      if constexpr (kBool)
        return use([](bool x) { return !x; }), true;
      else if constexpr (kInt)
        return use([](M x) { return static_cast<M>(~x); }), true;
      else
        return false;
    case UnaryOp::kLogicalNot:
      if constexpr (kBool)
        return use([](bool x) { return !x; }), true;
      else
        return false;
  }
  return false;
}

// base ** exponent for a Python-number exponent other than 0 and 1, with torch's fast paths
// (x*x, x*x*x, sqrt, rsqrt, 1/x).
template <typename T, typename Use>
bool pow_scalar_functor(Scalar exponent, Use&& use) {
  using M = opmath_t<T>;
  const double e = exponent.to_double();
  if constexpr (std::is_same_v<T, bool>) {
    return false;
  } else if constexpr (kInt<T>) {
    const T n = exponent.to<T>();
    use([n](M x) { return powi<M>(x, n); });
  } else if constexpr (std::is_same_v<T, Half>) {
    // torch's half kernel: the exponent rounded to half, no fast paths.
    const float n = static_cast<float>(Half(static_cast<float>(e)));
    use([n](float x) { return std::pow(x, n); });
  } else {
    if (e == 0.5) return use([](M x) { return std::sqrt(x); }), true;
    if (e == -0.5) return use([](M x) { return M(1) / std::sqrt(x); }), true;
    if (e == -1.0) return use([](M x) { return M(1) / x; }), true;
    if (e == 2.0) return use([](M x) { return x * x; }), true;
    // bfloat16 runs these in bfloat16 arithmetic, rounding after each product.
    if (e == 3.0) return use([](M x) { return M(T(x * x)) * x; }), true;
    if (e == -2.0) return use([](M x) { return M(1) / M(T(x * x)); }), true;
    const M n = static_cast<M>(T(static_cast<M>(e)));
    use([n](M x) { return std::pow(x, n); });
  }
  return true;
}

}  // namespace inplace::cpu::math
