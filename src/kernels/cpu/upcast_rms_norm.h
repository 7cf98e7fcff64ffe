// upcast_rms_norm's row kernel (Hugging Face's RMSNorm at a half dtype), callable by the kernels
// that normalise before their own work (rms_norm_rotary): bitwise the unfused chain
// (upcast_rms_norm.cpp says how).
#pragma once
#include "core/tensor.h"

namespace inplace::cpu {

struct NormRows {
  float eps = 0;
  bool in_float = false;  // the weight is float32, h times w in float, rounded once
  float offset = 0;       // the weight is float(w) + offset, applied as a float weight
};

// out = rms_norm(x) * weight (+ residual) over the last dim, when the operands are contiguous
// rows of bfloat16 or float16 (the weight of x's dtype, or float32 with in_float or an offset;
// a residual of x's shape and dtype, or out itself); returns false, touching nothing, otherwise.
bool upcast_rms_norm_rows(const Tensor& x, const Tensor& w, const Tensor* residual,
                          const Tensor& out, const NormRows& n);

}  // namespace inplace::cpu
