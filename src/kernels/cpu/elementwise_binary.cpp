// Binary arithmetic: add sub mul div (true/trunc/floor) remainder fmod pow maximum minimum
// and the bitwise ops, with torch's integer semantics (wrapping, floor division, powi).
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/elementwise_loop.h"

namespace inplace::cpu {

namespace {

using detail::Prepared;

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

// Integer division by zero is an error in torch; checked before anything is written.
template <typename T>
void check_divisor(const Tensor& out, const Prepared<T>& y, const char* name) {
  if (out.numel() == 0) return;  // torch checks per element: nothing to divide, no error
  bool zero = false;
  if (!y.tensor.defined()) {
    zero = y.value == 0;
  } else {
    const T* p = y.tensor.template data<T>();
    strided_loop<1>(y.tensor.shape(), {y.tensor.strides()}, [&](auto off, int64_t n, auto st) {
      for (int64_t i = 0; i < n; ++i) zero |= p[off[0] + i * st[0]] == 0;
    });
  }
  IP_CHECK(!zero, kInvalidArgument, "[", name, "] ZeroDivisionError: integer division by zero");
}

[[noreturn]] void unsupported(const char* name, DType t) {
  IP_FAIL(kDTypeMismatch, "[", name, "] not implemented for ", dtype_name(t));
}

template <typename T>
void binary_typed(BinaryOp op, const Tensor& out, const Operand& a, const Operand& b, Scalar alpha,
                  const char* name) {
  using M = opmath_t<T>;
  constexpr bool kFloat = kIsFloat<T>;
  constexpr bool kBool = std::is_same_v<T, bool>;
  // torch keeps a Python number's full precision in opmath for mul and div of half types.
  const bool scalar_in_opmath = op == BinaryOp::kMul || op == BinaryOp::kDiv;
  const Prepared<T> x = detail::prepare<T>(a, scalar_in_opmath);
  const Prepared<T> y = detail::prepare<T>(b, scalar_in_opmath);
  auto run = [&](auto f) { detail::run_binary<T, T>(out, x, y, f); };
  const bool unit_alpha = alpha.to_double() == 1.0;
  switch (op) {
    case BinaryOp::kAdd:
      if constexpr (kBool) {
        const bool al = alpha.to_bool();
        return run([al](bool p, bool q) { return p || (al && q); });
      } else {
        if (unit_alpha) return run([](M p, M q) { return add_wrap(p, q); });
        const M al = alpha.to<M>();
        return run([al](M p, M q) { return add_wrap(p, mul_wrap(al, q)); });
      }
    case BinaryOp::kSub:
      if constexpr (kBool) {
        unsupported(name, out.dtype());
      } else {
        if (unit_alpha) return run([](M p, M q) { return sub_wrap(p, q); });
        const M al = alpha.to<M>();
        return run([al](M p, M q) { return sub_wrap(p, mul_wrap(al, q)); });
      }
    case BinaryOp::kMul:
      if constexpr (kBool)
        return run([](bool p, bool q) { return p && q; });
      else
        return run([](M p, M q) { return mul_wrap(p, q); });
    case BinaryOp::kDiv:
      if constexpr (kFloat)
        return run([](M p, M q) { return p / q; });
      else
        unsupported(name, out.dtype());
    case BinaryOp::kDivTrunc:
      if constexpr (kFloat) {
        return run([](M p, M q) { return std::trunc(p / q); });
      } else if constexpr (kInt<T>) {
        check_divisor(out, y, name);
        return run([](M p, M q) { return div_trunc_int(p, q); });
      } else {
        unsupported(name, out.dtype());
      }
    case BinaryOp::kDivFloor:
      if constexpr (kFloat) {
        return run([](M p, M q) { return div_floor_float(p, q); });
      } else if constexpr (kInt<T>) {
        check_divisor(out, y, name);
        return run([](M p, M q) { return div_floor_int(p, q); });
      } else {
        unsupported(name, out.dtype());
      }
    case BinaryOp::kRemainder:
      if constexpr (kFloat) {
        return run([](M p, M q) { return remainder_float(p, q); });
      } else if constexpr (kInt<T>) {
        check_divisor(out, y, name);
        return run([](M p, M q) { return remainder_int(p, q); });
      } else {
        unsupported(name, out.dtype());
      }
    case BinaryOp::kFmod:
      if constexpr (kFloat) {
        return run([](M p, M q) { return std::fmod(p, q); });
      } else if constexpr (kInt<T>) {
        check_divisor(out, y, name);
        return run([](M p, M q) { return fmod_int(p, q); });
      } else {
        unsupported(name, out.dtype());
      }
    case BinaryOp::kPow:
      if constexpr (kFloat)
        return run([](M p, M q) { return std::pow(p, q); });
      else if constexpr (kInt<T>)
        return run([](M p, M q) { return powi(p, q); });
      else
        unsupported(name, out.dtype());
    case BinaryOp::kMaximum:
      if constexpr (kBool)
        return run([](bool p, bool q) { return p || q; });
      else
        return run([](M p, M q) { return maximum(p, q); });
    case BinaryOp::kMinimum:
      if constexpr (kBool)
        return run([](bool p, bool q) { return p && q; });
      else
        return run([](M p, M q) { return minimum(p, q); });
    case BinaryOp::kBitwiseAnd:
      if constexpr (kBool)
        return run([](bool p, bool q) { return p && q; });
      else if constexpr (kInt<T>)
        return run([](M p, M q) { return static_cast<M>(p & q); });
      else
        unsupported(name, out.dtype());
    case BinaryOp::kBitwiseOr:
      if constexpr (kBool)
        return run([](bool p, bool q) { return p || q; });
      else if constexpr (kInt<T>)
        return run([](M p, M q) { return static_cast<M>(p | q); });
      else
        unsupported(name, out.dtype());
    case BinaryOp::kBitwiseXor:
      if constexpr (kBool)
        return run([](bool p, bool q) { return p != q; });
      else if constexpr (kInt<T>)
        return run([](M p, M q) { return static_cast<M>(p ^ q); });
      else
        unsupported(name, out.dtype());
  }
  IP_ASSERT(false, "every BinaryOp is handled");
}

}  // namespace

void binary(BinaryOp op, const Tensor& out, const Operand& a, const Operand& b, Scalar alpha,
            const char* name) {
  visit_dtype(out.dtype(), [&]<typename T>() { binary_typed<T>(op, out, a, b, alpha, name); });
}

void pow_scalar(const Tensor& out, const Tensor& base, Scalar exponent) {
  const double e = exponent.to_double();
  if (e == 0.0) return fill(out, Scalar(1));
  if (e == 1.0) return copy_cast(out, base);
  // Convert the base into out first; the power then runs in place on out.
  const Tensor* src = &base;
  if (base.dtype() != out.dtype()) {
    copy_cast(out, base);
    src = &out;
  }
  visit_dtype(out.dtype(), [&]<typename T>() {
    using M = opmath_t<T>;
    auto run = [&](auto f) { detail::unary_map<T, T>(out, *src, f); };
    if constexpr (std::is_same_v<T, bool>) {
      unsupported("pow", out.dtype());
    } else if constexpr (kInt<T>) {
      const T n = exponent.to<T>();
      run([n](M x) { return powi<M>(x, n); });
    } else if constexpr (std::is_same_v<T, Half>) {
      // torch's half kernel: the exponent rounded to half, no fast paths.
      const float n = static_cast<float>(Half(static_cast<float>(e)));
      run([n](float x) { return std::pow(x, n); });
    } else {
      if (e == 0.5) return run([](M x) { return std::sqrt(x); });
      if (e == -0.5) return run([](M x) { return M(1) / std::sqrt(x); });
      if (e == -1.0) return run([](M x) { return M(1) / x; });
      if (e == 2.0) return run([](M x) { return x * x; });
      // bfloat16 runs these in bfloat16 arithmetic, rounding after each product.
      if (e == 3.0) return run([](M x) { return M(T(x * x)) * x; });
      if (e == -2.0) return run([](M x) { return M(1) / M(T(x * x)); });
      const M n = static_cast<M>(T(static_cast<M>(e)));
      run([n](M x) { return std::pow(x, n); });
    }
  });
}

}  // namespace inplace::cpu
