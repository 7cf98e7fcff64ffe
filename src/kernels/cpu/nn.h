// Neural-network kernels: layer_norm, rms_norm, scaled dot-product attention.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace inplace::cpu {

// Normalises x over its dims from `axis` on: (x - mean) * rstd * weight + bias, statistics in
// double. weight/bias (each optional) hold the normalised elements in x's dtype; mean and rstd
// (optional) get one value per row in x's dtype. out is contiguous with x's shape and dtype.
void layer_norm(const Tensor& x, int64_t axis, const Tensor& weight, const Tensor& bias, double eps,
                const Tensor& out, const Tensor& mean, const Tensor& rstd);
// x * rsqrt(mean(x^2) + eps) * weight over the dims from `axis` on; rstd (optional, float32 or
// float64) gets rsqrt(mean(x^2) + eps) per row.
void rms_norm(const Tensor& x, int64_t axis, const Tensor& weight, double eps, const Tensor& out,
              const Tensor& rstd = Tensor());

// out[..., L, Ev] = softmax(q @ k^T * scale + mask) @ v, batch dims of q [..., L, E],
// k [..., S, E], v [..., S, Ev] and mask (bool: True attends; float: added) broadcasting to
// out's. is_causal masks j > i. A row with nothing to attend gives zeros (torch's safe softmax).
// Floating dtypes; q, k, v and out share one. lse (optional, contiguous [batch..., L], float32
// or float64) gets each row's log-sum-exp of the masked, scaled scores (-inf for empty rows).
void scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& mask, double scale, bool is_causal,
                                  const Tensor& out, const Tensor& lse = Tensor());

}  // namespace inplace::cpu
