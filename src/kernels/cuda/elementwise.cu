// Elementwise CUDA kernels: strided, broadcasting maps with the cpu kernels' conversions
// (kernels/cpu/elementwise.h), numbered by the neutral op codes (ops/elementwise_codes.h): inputs
// converted to the compute type, results stored in out's dtype. One kernel per compute type; the op
// is a uniform runtime switch (cheap to compile).
#include <type_traits>

#include "kernels/cuda/device_common.cuh"
#include "ops/elementwise_codes.h"

namespace inplace::cuda {

namespace {

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
      if constexpr (kInt) {
        T r = 1;
        for (T e = b; e > 0; --e) r *= a;
        return r;
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

template <typename T>
__global__ void copy_kernel(Operand out, Operand src, int64_t n) {
  pdl_begin();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store<T>(out, i, load<T>(src, i));
}

template <typename T>
__global__ void binary_kernel(int op, Operand out, Operand a, Operand b, T alpha, int64_t n) {
  pdl_begin();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store<T>(out, i, binary_op<T>(op, load<T>(a, i), load<T>(b, i), alpha));
}

template <typename T>
__global__ void unary_kernel(int op, Operand out, Operand in, int64_t n) {
  pdl_begin();
  const bool out_bool = out.dtype == DType::kBool;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store<T>(out, i, unary_op<T>(op, load<T>(in, i), out_bool));
}

template <typename T>
__global__ void compare_kernel(int op, Operand out, Operand a, Operand b, int64_t n) {
  pdl_begin();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store<int64_t>(out, i, compare_op<T>(op, load<T>(a, i), load<T>(b, i)) ? 1 : 0);
}

template <typename T>
__global__ void where_kernel(Operand out, Operand cond, Operand a, Operand b, int64_t n) {
  pdl_begin();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store<T>(out, i, load<int64_t>(cond, i) != 0 ? load<T>(a, i) : load<T>(b, i));
}

bool is_float_type(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 ||
         t == DType::kBFloat16;
}

void check_launch(const char* what) {
  IP_CUDA_CHECK(cudaGetLastError(), what);
}

}  // namespace

void copy_cast(const Operand& out, const Operand& src, void* stream) {
  const int64_t n = numel(out);
  if (n == 0) return;
  const bool ints = !is_float_type(out.dtype) && (src.is_number || !is_float_type(src.dtype)) &&
                    !(src.is_number && src.number_is_float);
  if (ints)
    launch_pdl(copy_kernel<int64_t>, blocks_for(n), 256, as_stream(stream), out, src, n);
  else
    launch_pdl(copy_kernel<double>, blocks_for(n), 256, as_stream(stream), out, src, n);
  check_launch("copy");
}

void fill(const Operand& out, Scalar value, void* stream) {
  copy_cast(out, number(value), stream);
}

void binary(int op, const Operand& out, const Operand& a, const Operand& b, Scalar alpha,
            void* stream) {
  const int64_t n = numel(out);
  if (n == 0) return;
  const cudaStream_t s = as_stream(stream);
  switch (compute_kind(out.dtype)) {
    case 0:
      launch_pdl(binary_kernel<float>, blocks_for(n), 256, s, op, out, a, b,
                 static_cast<float>(alpha.to_double()), n);
      break;
    case 1:
      launch_pdl(binary_kernel<double>, blocks_for(n), 256, s, op, out, a, b, alpha.to_double(), n);
      break;
    default:
      launch_pdl(binary_kernel<int64_t>, blocks_for(n), 256, s, op, out, a, b, alpha.to_int(), n);
  }
  check_launch("binary");
}

void unary(int op, const Operand& out, const Operand& in, void* stream) {
  const int64_t n = numel(out);
  if (n == 0) return;
  const cudaStream_t s = as_stream(stream);
  // logical_not tests the input itself, whatever out's dtype.
  const DType compute =
      op == 25 ? (is_float_type(in.dtype) ? DType::kFloat64 : DType::kInt64) : out.dtype;
  switch (compute_kind(compute)) {
    case 0:
      launch_pdl(unary_kernel<float>, blocks_for(n), 256, s, op, out, in, n);
      break;
    case 1:
      launch_pdl(unary_kernel<double>, blocks_for(n), 256, s, op, out, in, n);
      break;
    default:
      launch_pdl(unary_kernel<int64_t>, blocks_for(n), 256, s, op, out, in, n);
  }
  check_launch("unary");
}

void compare(int op, const Operand& out, const Operand& a, const Operand& b, DType compute,
             void* stream) {
  const int64_t n = numel(out);
  if (n == 0) return;
  const cudaStream_t s = as_stream(stream);
  // Logical ops test each side for != 0 in its own type: double holds every value exactly
  // enough for that.
  if (op >= 6) compute = DType::kFloat64;
  switch (compute_kind(compute)) {
    case 0:
      launch_pdl(compare_kernel<float>, blocks_for(n), 256, s, op, out, a, b, n);
      break;
    case 1:
      launch_pdl(compare_kernel<double>, blocks_for(n), 256, s, op, out, a, b, n);
      break;
    default:
      launch_pdl(compare_kernel<int64_t>, blocks_for(n), 256, s, op, out, a, b, n);
  }
  check_launch("compare");
}

void where(const Operand& out, const Operand& cond, const Operand& a, const Operand& b,
           void* stream) {
  const int64_t n = numel(out);
  if (n == 0) return;
  const cudaStream_t s = as_stream(stream);
  switch (compute_kind(out.dtype)) {
    case 0:
      launch_pdl(where_kernel<float>, blocks_for(n), 256, s, out, cond, a, b, n);
      break;
    case 1:
      launch_pdl(where_kernel<double>, blocks_for(n), 256, s, out, cond, a, b, n);
      break;
    default:
      launch_pdl(where_kernel<int64_t>, blocks_for(n), 256, s, out, cond, a, b, n);
  }
  check_launch("where");
}

}  // namespace inplace::cuda
