// Binary arithmetic: add sub mul div (true/trunc/floor) remainder fmod pow maximum minimum
// and the bitwise ops, with torch's integer semantics (wrapping, floor division, powi).

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/elementwise_loop.h"
#include "kernels/cpu/elementwise_math.h"

namespace inplace::cpu {

namespace {

using detail::Prepared;

using namespace math;  // NOLINT: the functors of elementwise_math.h

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
  // torch keeps a Python number's full precision in opmath for mul and div of half types.
  const bool scalar_in_opmath = op == BinaryOp::kMul || op == BinaryOp::kDiv;
  const Prepared<T> x = detail::prepare<T>(a, scalar_in_opmath);
  const Prepared<T> y = detail::prepare<T>(b, scalar_in_opmath);
  if constexpr (kInt<T>) {
    if (op == BinaryOp::kDivTrunc || op == BinaryOp::kDivFloor || op == BinaryOp::kRemainder ||
        op == BinaryOp::kFmod)
      check_divisor(out, y, name);
  }
  auto run = [&](auto f) { detail::run_binary<T, T>(out, x, y, f); };
  if (!binary_functor<T>(op, alpha, run)) unsupported(name, out.dtype());
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
    auto run = [&](auto f) { detail::unary_map<T, T>(out, *src, f); };
    if (!pow_scalar_functor<T>(exponent, run)) unsupported("pow", out.dtype());
  });
}

}  // namespace inplace::cpu
