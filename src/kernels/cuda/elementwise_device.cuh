// The elementwise ops' math on the device, over a compute type (float, double or int64) and
// numbered by the neutral op codes (ops/elementwise_codes.h): the unfused kernels
// (elementwise.cu).
#pragma once
#include <type_traits>

#include "ops/elementwise_codes.h"

namespace inplace::cuda {

#define IP_MATH(fn, x)                      \
  do {                                      \
    if constexpr (std::is_same_v<T, float>) \
      return fn##f(x);                      \
    else                                    \
      return fn(x);                         \
  } while (0)

template <typename T>
__device__ T m_exp(T x) {
  IP_MATH(exp, x);
}
template <typename T>
__device__ T m_log(T x) {
  IP_MATH(log, x);
}
template <typename T>
__device__ T m_floor(T x) {
  IP_MATH(floor, x);
}
template <typename T>
__device__ T m_fmod(T a, T b) {
  if constexpr (std::is_same_v<T, float>)
    return fmodf(a, b);
  else
    return fmod(a, b);
}

template <typename T>
__device__ T binary_op(int op, T a, T b, T alpha) {
  constexpr bool kInt = std::is_integral_v<T>;
  switch (static_cast<BinaryOp>(op)) {
    case BinaryOp::kAdd:
      return a + alpha * b;
    case BinaryOp::kSub:
      return a - alpha * b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
    case BinaryOp::kDivTrunc:  // trunc
      if constexpr (kInt)
        return b == 0 ? T(0) : a / b;
      else
        return trunc(a / b);
    case BinaryOp::kDivFloor:  // floor
      if constexpr (kInt) {
        if (b == 0) return T(0);
        T q = a / b;
        return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
      } else {
        return m_floor(a / b);
      }
    case BinaryOp::kRemainder: {  // Python remainder
      if constexpr (kInt) {
        if (b == 0) return T(0);
        T r = a % b;
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
      } else {
        T r = m_fmod(a, b);
        return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? r + b : r;
      }
    }
    case BinaryOp::kFmod:
      if constexpr (kInt)
        return b == 0 ? T(0) : a % b;
      else
        return m_fmod(a, b);
    case BinaryOp::kPow:
      if constexpr (kInt) {  // as the cpu's powi: 0 for negative exponents but of +-1
        if (b < 0) return a == 1 ? T(1) : a == -1 ? ((b & 1) ? T(-1) : T(1)) : T(0);
        uint64_t r = 1, x = static_cast<uint64_t>(a);  // by squaring, wrapping as the cpu
        for (uint64_t e = static_cast<uint64_t>(b); e != 0; e >>= 1) {
          if (e & 1) r *= x;
          x *= x;
        }
        return static_cast<T>(r);
      } else if constexpr (std::is_same_v<T, float>) {
        return powf(a, b);
      } else {
        return pow(a, b);
      }
    case BinaryOp::kMaximum:
      if constexpr (!kInt)
        if (a != a || b != b) return a != a ? a : b;
      return a > b ? a : b;
    case BinaryOp::kMinimum:
      if constexpr (!kInt)
        if (a != a || b != b) return a != a ? a : b;
      return a < b ? a : b;
    case BinaryOp::kBitwiseAnd:
      if constexpr (kInt) return a & b;
      return T(0);
    case BinaryOp::kBitwiseOr:
      if constexpr (kInt) return a | b;
      return T(0);
    case BinaryOp::kBitwiseXor:
      if constexpr (kInt) return a ^ b;
      return T(0);
    default:
      break;
  }
  return T(0);
}

template <typename T>
__device__ T unary_op(int op, T x, bool out_bool) {
  if constexpr (std::is_integral_v<T>) {
    switch (static_cast<UnaryOp>(op)) {
      case UnaryOp::kNeg:
        return -x;
      case UnaryOp::kAbs:
        return x < 0 ? -x : x;
      case UnaryOp::kRelu:
        return x > 0 ? x : T(0);
      case UnaryOp::kBitwiseNot:  // bitwise_not; on bool a logical not
        return out_bool ? T(x == 0) : ~x;
      case UnaryOp::kLogicalNot:
        return T(x == 0);
      default:  // rounding of integers
        return x;
    }
  } else {
    switch (static_cast<UnaryOp>(op)) {
      case UnaryOp::kNeg:
        return -x;
      case UnaryOp::kAbs:
        return x < T(0) ? -x : x;
      case UnaryOp::kSqrt:
        IP_MATH(sqrt, x);
      case UnaryOp::kRsqrt:
        IP_MATH(rsqrt, x);
      case UnaryOp::kExp:
        return m_exp(x);
      case UnaryOp::kLog:
        return m_log(x);
      case UnaryOp::kLog2:
        IP_MATH(log2, x);
      case UnaryOp::kLog1p:
        IP_MATH(log1p, x);
      case UnaryOp::kExpm1:
        IP_MATH(expm1, x);
      case UnaryOp::kSin:
        IP_MATH(sin, x);
      case UnaryOp::kCos:
        IP_MATH(cos, x);
      case UnaryOp::kTan:
        IP_MATH(tan, x);
      case UnaryOp::kTanh:
        IP_MATH(tanh, x);
      case UnaryOp::kErf:
        IP_MATH(erf, x);
      case UnaryOp::kSigmoid:
        return T(1) / (T(1) + m_exp(-x));
      case UnaryOp::kRelu:
        return x > T(0) ? x : (x != x ? x : T(0));
      case UnaryOp::kGelu: {
        T e;
        if constexpr (std::is_same_v<T, float>)
          e = erff(x * T(0.70710678118654752440));
        else
          e = erf(x * T(0.70710678118654752440));
        return T(0.5) * x * (T(1) + e);
      }
      case UnaryOp::kGeluTanh: {
        const T inner = T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);
        T th;
        if constexpr (std::is_same_v<T, float>)
          th = tanhf(inner);
        else
          th = tanh(inner);
        return T(0.5) * x * (T(1) + th);
      }
      case UnaryOp::kSilu:
        return x / (T(1) + m_exp(-x));
      case UnaryOp::kReciprocal:
        return T(1) / x;
      case UnaryOp::kFloor:
        return m_floor(x);
      case UnaryOp::kCeil:
        IP_MATH(ceil, x);
      case UnaryOp::kRound:
        IP_MATH(rint, x);
      case UnaryOp::kTrunc:
        IP_MATH(trunc, x);
      case UnaryOp::kHardswish: {  // as the cpu's: min(max(x + 3, 0), 6) with NaN kept
        T t = x + T(3);
        t = t < T(0) ? T(0) : t;
        t = T(6) < t ? T(6) : t;
        return x * t / T(6);
      }
      case UnaryOp::kLogicalNot:
        return T(x == T(0));
      default:
        break;
    }
    return x;
  }
}

template <typename T>
__device__ bool compare_op(int op, T a, T b) {
  switch (static_cast<CompareOp>(op)) {
    case CompareOp::kEq:
      return a == b;
    case CompareOp::kNe:
      return a != b;
    case CompareOp::kLt:
      return a < b;
    case CompareOp::kLe:
      return a <= b;
    case CompareOp::kGt:
      return a > b;
    case CompareOp::kGe:
      return a >= b;
    case CompareOp::kAnd:
      return a != T(0) && b != T(0);
    case CompareOp::kOr:
      return a != T(0) || b != T(0);
    case CompareOp::kXor:
      return (a != T(0)) != (b != T(0));
  }
  return false;
}

}  // namespace inplace::cuda
