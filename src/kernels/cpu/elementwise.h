// Elementwise CPU kernels: broadcasting unary, binary and ternary maps over strided tensors,
// registered into the kernel table by elementwise_kernels.cpp. The op layer (ops/elementwise_*)
// picks the result dtype with torch's promotion rules and checks what a user can get wrong; these
// kernels convert each input to the compute dtype (as TensorIterator does), compute in opmath
// (float for half types) and write into `out`, which may be strided and may be the very same view
// as an input.
#pragma once
#include <optional>

#include "core/scalar.h"
#include "core/tensor.h"
#include "ops/elementwise_args.h"

namespace inplace::cpu {

// The operand and the op codes are the neutral ones every backend reads (ops/elementwise_args.h).
using elementwise::Operand;
using inplace::BinaryOp;
using inplace::CompareOp;
using inplace::UnaryOp;

// ---- binary arithmetic (elementwise_binary.cpp): out's dtype is the compute dtype.
// `name` prefixes errors a kernel can still raise (integer division by zero).
void binary(BinaryOp op, const Tensor& out, const Operand& a, const Operand& b, Scalar alpha,
            const char* name);
// out = base ** exponent for a Python-number exponent, with torch's fast paths
// (x*x, x*x*x, sqrt, rsqrt, 1/x); base is converted to out's dtype.
void pow_scalar(const Tensor& out, const Tensor& base, Scalar exponent);

// ---- comparison and logical (elementwise_compare.cpp): out is bool.
// Comparisons convert both sides to `compute`; logical ops test each side for != 0.
void compare(CompareOp op, const Tensor& out, const Operand& a, const Operand& b, DType compute);

// ---- unary math (elementwise_unary.cpp): `in` is converted to out's dtype first.
void unary(UnaryOp op, const Tensor& out, const Tensor& in);
// silu over n contiguous float32 values, exactly as unary(kSilu) computes them (y may be x).
void silu_f32(const float* x, float* y, int64_t n);

// ---- selection (elementwise_select.cpp): inputs are converted to out's dtype.
// out = cond ? a : b; cond is bool or uint8.
void where(const Tensor& out, const Tensor& cond, const Operand& a, const Operand& b);
// out = min(max(self, lo), hi) with either bound optional; NaN bounds propagate for tensors.
void clamp(const Tensor& out, const Operand& self, const std::optional<Operand>& lo,
           const std::optional<Operand>& hi);

// ---- copy, cast and fill (elementwise_copy.cpp)
// out = src broadcast to out's shape and converted to out's dtype; safe when they overlap.
void copy_cast(const Tensor& out, const Tensor& src);
void fill(const Tensor& out, Scalar value);

}  // namespace inplace::cpu
