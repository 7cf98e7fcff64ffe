// GPT-2's gelu_new as straight-line code (pointwise::match_gelu_new), for GEMV epilogues: the
// interpreter's functions on the same operands, each result rounded to T. A file including this
// is compiled with --fmad=false (pointwise_device.cuh), as the interpreter's is.
#pragma once
#include "kernels/cuda/layer_norm_device.cuh"
#include "kernels/cuda/pointwise_device.cuh"
#include "ops/pointwise_forms.h"

namespace inplace::cuda {

// GPT-2's gelu_new (pointwise::match_gelu_new) on y as the one-dtype interpreter runs it: the
// same functions on the same operands, each result rounded to T, the numbers as floats.
template <typename T>
__device__ inline float gelu_new(const pointwise::GeluNew& k, float x) {
  using pointwise_device::activation_binary_f;
  auto round = [](float v) { return to_f(from_f<T>(v)); };
  constexpr int kMul = static_cast<int>(BinaryOp::kMul), kAdd = static_cast<int>(BinaryOp::kAdd);
  const float half = round(activation_binary_f(kMul, x, k.half));
  const float cube = round(binary_op<float>(static_cast<int>(BinaryOp::kPow), x, k.p, 1.f));
  const float inner =
      round(activation_binary_f(kAdd, x, round(activation_binary_f(kMul, cube, k.a))));
  const float th = round(pointwise_device::activation_unary_f(
      static_cast<int>(UnaryOp::kTanh), round(activation_binary_f(kMul, inner, k.c))));
  return round(activation_binary_f(kMul, half, round(activation_binary_f(kAdd, th, k.one))));
}

}  // namespace inplace::cuda
