// A gated MLP's activation in the GEMV epilogues (gemv_device.cuh, gemv_half.cu), in float: the
// expression the unary kernel computes for the op (elementwise_device.cuh), so the fused step
// gives the chain's values.
#pragma once
#include "kernels/cuda/launch.h"

namespace inplace::cuda {

__device__ inline float gate_act(GateActivation kind, float v) {
  if (kind == GateActivation::kGeluTanh) {  // gelu(v, approximate='tanh')
    const float inner = 0.79788456080286535588f * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.f + tanhf(inner));
  }
  return v / (1.f + expf(-v));  // silu
}

}  // namespace inplace::cuda
