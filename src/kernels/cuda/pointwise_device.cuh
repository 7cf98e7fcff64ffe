// The fused_pointwise program's interpreter, as device code (included by fused_pointwise.cu and by
// kernels that run a program as their epilogue, gemv_in_out.cu): registers in local memory, each
// holding what the unfused chain would hold there: a value its kernel stored in the register's
// dtype (store_at) and the next kernel loaded in its compute type (load_at: float for 16- and
// 32-bit floats, double, int64 for integers and bool). Every op is the unfused kernels' own
// function (elementwise_device.cuh), called in the same compute type with the same operands; a
// file including this is compiled with --fmad=false, as elementwise.cu, so no contraction
// depends on the code around a call.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/elementwise_device.cuh"
#include "ops/pointwise_program.h"

namespace inplace::cuda::pointwise_device {

using pointwise::Instr;
using pointwise::Opcode;

union Reg {
  float f;
  double d;
  int64_t i;
};

template <typename C>
__device__ inline C get(const Reg& r) {
  if constexpr (std::is_same_v<C, float>)
    return r.f;
  else if constexpr (std::is_same_v<C, double>)
    return r.d;
  else
    return r.i;
}

template <typename C>
__device__ inline Reg make(C v) {
  Reg r;
  if constexpr (std::is_same_v<C, float>)
    r.f = v;
  else if constexpr (std::is_same_v<C, double>)
    r.d = v;
  else
    r.i = v;
  return r;
}

// 0 float, 1 double, 2 int64 (compute_kind, on the device).
__device__ inline int kind_of(DType t) {
  if (t == DType::kFloat64) return 1;
  if (t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16) return 0;
  return 2;
}

// The element at p[e] of dtype t, loaded in t's compute type.
__device__ inline Reg load_reg(const char* p, DType t, int64_t e) {
  switch (kind_of(t)) {
    case 0:
      return make(load_at<float>(p, t, e));
    case 1:
      return make(load_at<double>(p, t, e));
    default:
      return make(load_at<int64_t>(p, t, e));
  }
}

// v as a kernel computing in C stores it in dtype t and the next kernel loads it.
template <typename C>
__device__ inline Reg stored(C v, DType t) {
  alignas(8) char slot[8];
  store_at<C>(slot, t, 0, v);
  return load_reg(slot, t, 0);
}

// A register of dtype `from` converted to `to` as the unfused cast (copy_cast) does: through
// int64 between integer types, through float from an integer type to float32, through double
// otherwise.
__device__ inline Reg cast(const Reg& x, DType from, DType to) {
  const bool float_from = kind_of(from) != 2, float_to = kind_of(to) != 2;
  if (!float_from && !float_to) return stored<int64_t>(x.i, to);
  if (!float_from && to == DType::kFloat32) return stored<float>(static_cast<float>(x.i), to);
  switch (kind_of(from)) {
    case 0:
      return stored<double>(static_cast<double>(x.f), to);
    case 1:
      return stored<double>(x.d, to);
    default:
      return stored<double>(static_cast<double>(x.i), to);
  }
}

// A number of the program (kind, two halves) as the unfused kernels load it (load(): a float
// as its double, an int or bool as its int64, then static_cast to the compute type C).
template <typename C>
__device__ inline C number_as(int32_t kind, int32_t lo, int32_t hi) {
  const uint64_t bits = pointwise::join_bits(lo, hi);
  switch (static_cast<pointwise::ScalarKind>(kind)) {
    case pointwise::ScalarKind::kFloat:
      return static_cast<C>(__longlong_as_double(static_cast<long long>(bits)));
    case pointwise::ScalarKind::kBool:
      return static_cast<C>(bits != 0 ? int64_t{1} : int64_t{0});
    default:
      return static_cast<C>(static_cast<int64_t>(bits));
  }
}

// A kConst register of dtype t: the number in t's compute type, not rounded to t (the unfused
// kernels never round a number to the dtype). At bool that is its int64 (where, masked_fill and
// arithmetic) where the logical ops test the double for != 0: fused_pointwise_refusal refuses the
// numbers on which the two differ (NaN, a fraction below 1).
__device__ inline Reg constant(const Instr& in, DType t) {
  const int32_t kind = in.a & 3;
  switch (kind_of(t)) {
    case 0:
      return make(number_as<float>(kind, in.b, in.c));
    case 1:
      return make(number_as<double>(kind, in.b, in.c));
    default:
      return make(number_as<int64_t>(kind, in.b, in.c));
  }
}

// The ops computed in C, t's compute type (for a comparison, its operands' dtype).
template <typename C>
__device__ inline Reg op(const Instr& in, const Reg* regs, DType t) {
  switch (in.op) {
    case Opcode::kUnary:
      return stored<C>(unary_op<C>(in.b, get<C>(regs[in.a]), t == DType::kBool), t);
    case Opcode::kBinary:
      return stored<C>(binary_op<C>(in.c, get<C>(regs[in.a]), get<C>(regs[in.b]), C(1)), t);
    case Opcode::kPowScalar:
      return stored<C>(binary_op<C>(static_cast<int>(BinaryOp::kPow), get<C>(regs[in.a]),
                                    number_as<C>(in.b, in.c, in.d), C(1)),
                       t);
    case Opcode::kCompare: {
      Reg r;  // the bool result, as compare_kernel stores it and the next kernel loads it
      r.i = compare_op<C>(in.c, get<C>(regs[in.a]), get<C>(regs[in.b])) ? 1 : 0;
      return r;
    }
    case Opcode::kWhere:
      return stored<C>(regs[in.a].i != 0 ? get<C>(regs[in.b]) : get<C>(regs[in.c]), t);
    default:
      return make<int64_t>(0);
  }
}

// Runs the program code[0, n_code) (register dtypes `reg`) on one element: kLoad of input i
// takes load(i, dtype) (a Reg); returns the register kStore stores, its dtype in *out.
// kRows (fused_rows): kReduce instruction k takes reduced[k] (its row's value), and where `stop`
// is an instruction the run ends there, returning that instruction's operand register (a
// reduction's operand), its dtype in *out.
template <bool kRows = false, typename Load>
__device__ inline Reg run(const Instr* code, const uint8_t* reg, int n_code, Load&& load,
                          DType* out, const Reg* reduced = nullptr, int stop = -1) {
  Reg regs[pointwise::kMaxInstructions];
  for (int k = 0; k < n_code; ++k) {
    const Instr& in = code[k];
    const DType t = static_cast<DType>(in.dtype);
    if constexpr (kRows) {
      if (k == stop) {
        *out = static_cast<DType>(reg[in.a]);
        return regs[in.a];
      }
      if (in.op == Opcode::kReduce) {
        regs[k] = reduced[k];
        continue;
      }
    }
    switch (in.op) {
      case Opcode::kLoad:
        regs[k] = load(in.a, t);
        break;
      case Opcode::kConst:
        regs[k] = constant(in, t);
        break;
      case Opcode::kCast:
        regs[k] = cast(regs[in.a], static_cast<DType>(reg[in.a]), t);
        break;
      case Opcode::kStore:
        *out = t;
        return regs[in.a];
      default:
        switch (kind_of(t)) {
          case 0:
            regs[k] = op<float>(in, regs, t);
            break;
          case 1:
            regs[k] = op<double>(in, regs, t);
            break;
          default:
            regs[k] = op<int64_t>(in, regs, t);
        }
    }
  }
  *out = DType::kFloat32;
  return make<float>(0.f);
}

// The ops run_one_dtype<T, true> covers: what activations are spelled with (GPT-2's gelu_new is
// pow, mul, add, tanh; others exp, sigmoid, silu, relu, neg).
inline bool activation_unary(int op) {
  switch (static_cast<UnaryOp>(op)) {
    case UnaryOp::kNeg:
    case UnaryOp::kExp:
    case UnaryOp::kTanh:
    case UnaryOp::kSigmoid:
    case UnaryOp::kSilu:
    case UnaryOp::kRelu:
      return true;
    default:
      return false;
  }
}
inline bool activation_binary(int op) {
  const auto b = static_cast<BinaryOp>(op);
  return b == BinaryOp::kAdd || b == BinaryOp::kSub || b == BinaryOp::kMul || b == BinaryOp::kDiv;
}

// unary_op<float> and binary_op<float> for the activation ops, each case the general function
// called with its op as a constant (the same code, so the same bits).
__device__ inline float activation_unary_f(int op, float x) {
  switch (static_cast<UnaryOp>(op)) {
    case UnaryOp::kNeg:
      return unary_op<float>(static_cast<int>(UnaryOp::kNeg), x, false);
    case UnaryOp::kExp:
      return unary_op<float>(static_cast<int>(UnaryOp::kExp), x, false);
    case UnaryOp::kTanh:
      return unary_op<float>(static_cast<int>(UnaryOp::kTanh), x, false);
    case UnaryOp::kSigmoid:
      return unary_op<float>(static_cast<int>(UnaryOp::kSigmoid), x, false);
    case UnaryOp::kSilu:
      return unary_op<float>(static_cast<int>(UnaryOp::kSilu), x, false);
    default:
      return unary_op<float>(static_cast<int>(UnaryOp::kRelu), x, false);
  }
}
__device__ inline float activation_binary_f(int op, float a, float b) {
  switch (static_cast<BinaryOp>(op)) {
    case BinaryOp::kAdd:
      return binary_op<float>(static_cast<int>(BinaryOp::kAdd), a, b, 1.f);
    case BinaryOp::kSub:
      return binary_op<float>(static_cast<int>(BinaryOp::kSub), a, b, 1.f);
    case BinaryOp::kMul:
      return binary_op<float>(static_cast<int>(BinaryOp::kMul), a, b, 1.f);
    default:
      return binary_op<float>(static_cast<int>(BinaryOp::kDiv), a, b, 1.f);
  }
}

// run() for a program whose every instruction is a load, number, unary, binary or pow_scalar op
// of one float dtype T (no casts, comparisons or where), on one input: the same functions and
// roundings (stored<float> at T is a rounding to T), its registers floats. `load(i)` is input i.
// kActivation: a program of activation ops only (activation_unary, activation_binary), whose
// loop then holds just those ops' code, a small part of the general one: its first run in a
// kernel misses the instruction cache a few times instead of at every op (GPT-2's c_fc
// epilogue: ~5 us of misses a launch). The same operations, so the same bits.
template <typename T, bool kActivation = false, typename Load>
__device__ inline float run_one_dtype(const Instr* code, int n_code, Load&& load) {
  float regs[pointwise::kMaxInstructions];
  auto round = [](float v) { return to_f(from_f<T>(v)); };
  for (int k = 0; k < n_code; ++k) {
    const Instr& in = code[k];
    switch (in.op) {
      case Opcode::kLoad:
        regs[k] = load(in.a);
        break;
      case Opcode::kConst:
        regs[k] = number_as<float>(in.a & 3, in.b, in.c);
        break;
      case Opcode::kUnary:
        if constexpr (kActivation)
          regs[k] = round(activation_unary_f(in.b, regs[in.a]));
        else
          regs[k] = round(unary_op<float>(in.b, regs[in.a], false));
        break;
      case Opcode::kBinary:
        if constexpr (kActivation)
          regs[k] = round(activation_binary_f(in.c, regs[in.a], regs[in.b]));
        else
          regs[k] = round(binary_op<float>(in.c, regs[in.a], regs[in.b], 1.f));
        break;
      case Opcode::kPowScalar:
        regs[k] = round(binary_op<float>(static_cast<int>(BinaryOp::kPow), regs[in.a],
                                         number_as<float>(in.b, in.c, in.d), 1.f));
        break;
      case Opcode::kStore:
        return regs[in.a];
      default:
        break;
    }
  }
  return 0.f;
}

// Stores register r of dtype t at p[o].
__device__ inline void store_reg(char* p, DType t, int64_t o, const Reg& r) {
  switch (kind_of(t)) {
    case 0:
      store_at<float>(p, t, o, r.f);
      break;
    case 1:
      store_at<double>(p, t, o, r.d);
      break;
    default:
      store_at<int64_t>(p, t, o, r.i);
  }
}

}  // namespace inplace::cuda::pointwise_device
