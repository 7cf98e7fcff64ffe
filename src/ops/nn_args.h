// Argument decoding of the nn ops (layer_norm, native_layer_norm, rms_norm, _fused_rms_norm,
// scaled_dot_product_attention and its flash form, the dropouts), read by their declarations
// (shape/dtype rules) and by every backend's kernels.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/tensor.h"
#include "core/value.h"
#include "ops/registry.h"  // Args

namespace inplace::nn {

// Checks input / normalized_shape / weight / bias; returns the first normalised dim.
int64_t check_norm(const char* op, const Tensor& x, const Shape& normalized, const Value& weight,
                   const Value& bias);
// An optional tensor argument: undefined for None.
Tensor opt_tensor(const Value& v, const char* op);
// rms_norm's eps: eps=None is the epsilon of the dtype torch computes in (float for half
// types), as ATen does.
double rms_eps(const Tensor& x, const Value& eps);
// The weight of upcast_rms_norm or rms_norm_rotary (argument `w`, with weight_in_float at
// `in_float` and weight_offset at `offset`): over x's last dim, of x's dtype, or float32 with
// weight_in_float; with a nonzero offset (which needs weight_in_float) of x's dtype or float32.
void check_upcast_norm_weight(const char* op, const Tensor& x, const Args& a, size_t w,
                              size_t in_float, size_t offset);
// Where upcast_rms_norm and rms_norm_rotary hold weight_offset (and upcast_rms_norm its residual).
constexpr size_t kUpcastNormOffsetArg = 4, kUpcastNormResidualArg = 5, kNormRotaryOffsetArg = 8;
// weight_offset of such a norm (0 where not given).
double norm_weight_offset(const Args& a, size_t offset);

constexpr const char* kSdpa = "scaled_dot_product_attention";

struct SdpaPlan {
  Tensor q, k, v, mask, out_view;  // out_view: set by the out function
  Shape out_shape;                 // torch's result shape
  Shape grouped_shape;             // out's shape as the kernel sees it (heads split for GQA)
  double scale;
  bool causal;
};

// scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
// enable_gqa): validates the arguments and prepares views: with enable_gqa, query's heads split
// into (kv heads, group) so key and value broadcast over the group without a copy.
SdpaPlan plan_sdpa(const Args& a);
// scaled_dot_product_attention's `window` (our keyword past torch's; 0 where absent): a query
// attends only the last `window` of the S keys it is given, [max(0, S - window), S), as a
// sliding-window mask over the filled prefix would (attend_filled_prefix writes it). Checked:
// not negative, no attn_mask, not causal.
int64_t sdpa_window(const Args& a);
// k (or v) as a windowed attention reads it: its last `window` rows along dim -2.
Tensor window_keys(const Tensor& k, int64_t window);
// _scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p, is_causal,
// attn_mask, scale): the same plan, for 4-D operands.
SdpaPlan plan_sdpa_flash(const Args& a);
// The scores' scale: 1 / sqrt(head_dim) unless given.
double sdpa_scale(const Value& scale, int64_t head_dim);

// Dropout runs in eval mode only (inplace runs inference): p in [0, 1], not training.
void check_dropout(const char* op, double p, bool train);

}  // namespace inplace::nn
