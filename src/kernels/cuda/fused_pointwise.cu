// fused_pointwise on CUDA: one thread per output element interprets the program
// (ops/pointwise_program.h) with its registers in local memory. Each register holds its dtype's
// compute value (float for 16- and 32-bit floats, double, int64 for integers and bool) rounded to
// the dtype after every instruction, as the unfused kernels' stores round.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/elementwise_device.cuh"
#include "kernels/cuda/fused_pointwise.h"

namespace inplace::cuda {

namespace {

using pointwise::Instr;
using pointwise::Opcode;

union Reg {
  float f;
  double d;
  int64_t i;
};

__device__ inline int kind_of(DType t) {
  if (t == DType::kFloat64) return 1;
  if (t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16) return 0;
  return 2;
}

// A compute value rounded to dtype t.
__device__ inline Reg rounded(Reg v, DType t) {
  switch (t) {
    case DType::kFloat16:
      v.f = __half2float(__float2half_rn(v.f));
      break;
    case DType::kBFloat16:
      v.f = __bfloat162float(__float2bfloat16_rn(v.f));
      break;
    case DType::kInt32:
      v.i = static_cast<int32_t>(v.i);
      break;
    case DType::kInt16:
      v.i = static_cast<int16_t>(v.i);
      break;
    case DType::kInt8:
      v.i = static_cast<int8_t>(v.i);
      break;
    case DType::kUInt8:
      v.i = static_cast<uint8_t>(v.i);
      break;
    case DType::kBool:
      v.i = v.i != 0;
      break;
    default:
      break;
  }
  return v;
}

__device__ inline Reg from_double(double x, bool integral, int64_t i, DType t) {
  Reg r;
  switch (kind_of(t)) {
    case 0:
      r.f = integral ? static_cast<float>(i) : static_cast<float>(x);
      break;
    case 1:
      r.d = integral ? static_cast<double>(i) : x;
      break;
    default:
      if (t == DType::kBool)
        r.i = integral ? i != 0 : x != 0.0;
      else
        r.i = integral ? i : static_cast<int64_t>(x);
  }
  return r;
}

__device__ inline Reg number(int32_t kind, int32_t lo, int32_t hi, DType t) {
  const uint64_t bits = pointwise::join_bits(lo, hi);
  if (kind == static_cast<int32_t>(pointwise::ScalarKind::kFloat))
    return from_double(__longlong_as_double(static_cast<long long>(bits)), false, 0, t);
  return from_double(0, true, static_cast<int64_t>(bits), t);
}

__device__ inline Reg convert(Reg v, DType from, DType to) {
  switch (kind_of(from)) {
    case 0:
      return rounded(from_double(v.f, false, 0, to), to);
    case 1:
      return rounded(from_double(v.d, false, 0, to), to);
    default:
      return rounded(from_double(0, true, v.i, to), to);
  }
}

template <typename T>
__device__ inline T pow_number(T x, double e) {
  if (e == 0.5) return sqrt(x);
  if (e == -0.5) return T(1) / sqrt(x);
  if (e == -1.0) return T(1) / x;
  if (e == 2.0) return x * x;
  return pow(x, T(e));
}

template <typename T>
__device__ inline T& get(Reg& r) {
  if constexpr (std::is_same_v<T, float>)
    return r.f;
  else if constexpr (std::is_same_v<T, double>)
    return r.d;
  else
    return r.i;
}
template <typename T>
__device__ inline T val(const Reg& r) {
  return val<T>((r));
}

template <typename T>
__device__ inline Reg exec(const Instr& in, const Reg* regs, const FusedPointwise& p, int64_t e) {
  Reg r;
  const DType t = static_cast<DType>(in.dtype);
  T& v = get<T>(r);
  switch (in.op) {
    case Opcode::kLoad:
      v = load<T>(p.inputs[in.a], e);
      break;
    case Opcode::kUnary:
      v = unary_op<T>(in.b, val<T>((regs[in.a])), t == DType::kBool);
      break;
    case Opcode::kBinary:
      v = binary_op<T>(in.c, val<T>((regs[in.a])), val<T>((regs[in.b])), T(1));
      break;
    case Opcode::kPowScalar: {
      const Reg n = number(in.b, in.c, in.d, DType::kFloat64);
      if constexpr (std::is_integral_v<T>)
        v = binary_op<T>(static_cast<int>(BinaryOp::kPow), val<T>((regs[in.a])),
                         static_cast<T>(n.d), T(1));
      else
        v = pow_number<T>(val<T>((regs[in.a])), n.d);
      break;
    }
    case Opcode::kCompare:
      r.i = compare_op<T>(in.c, val<T>((regs[in.a])), val<T>((regs[in.b]))) ? 1 : 0;
      return r;
    case Opcode::kWhere:
      return regs[in.a].i ? regs[in.b] : regs[in.c];
    default:
      break;
  }
  return rounded(r, t);
}

__global__ void fused_kernel(const FusedPointwise p, int64_t n) {
  pdl_begin();
  Reg regs[pointwise::kMaxInstructions];
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    for (int k = 0; k < p.n_code; ++k) {
      const Instr& in = p.code[k];
      const DType t = static_cast<DType>(in.dtype);
      if (in.op == Opcode::kConst) {
        regs[k] = number(in.a & 3, in.b, in.c, t);  // in opmath: mul and div keep its precision
        if (!(in.a & pointwise::kConstInOpmath)) regs[k] = rounded(regs[k], t);
      } else if (in.op == Opcode::kCast) {
        // the source register's dtype is the one its own instruction (or comparison) made
        const Instr& src = p.code[in.a];
        const DType from =
            src.op == Opcode::kCompare ? DType::kBool : static_cast<DType>(src.dtype);
        regs[k] = convert(regs[in.a], from, t);
      } else if (in.op == Opcode::kStore) {
        const Reg& v = regs[in.a];
        switch (kind_of(t)) {
          case 0:
            store<float>(p.out, e, v.f);
            break;
          case 1:
            store<double>(p.out, e, v.d);
            break;
          default:
            store<int64_t>(p.out, e, v.i);
        }
      } else {
        switch (kind_of(t)) {
          case 0:
            regs[k] = exec<float>(in, regs, p, e);
            break;
          case 1:
            regs[k] = exec<double>(in, regs, p, e);
            break;
          default:
            regs[k] = exec<int64_t>(in, regs, p, e);
        }
      }
    }
  }
}

}  // namespace

void fused_pointwise(const FusedPointwise& p, void* stream) {
  const int64_t n = numel(p.out);
  if (n == 0) return;
  launch_pdl(fused_kernel, blocks_for(n), 256, as_stream(stream), p, n);
  IP_CUDA_CHECK(cudaGetLastError(), "fused_pointwise");
}

}  // namespace inplace::cuda
