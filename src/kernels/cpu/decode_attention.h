// Attention for decoding: a few query rows against the filled prefix of a K/V cache in one pass
// (flash-decoding's online softmax), reading each key and value row once for all the query rows
// that share it (the grouped query heads of one KV head). No scratch memory: scores live in a
// fixed block on the stack, so nothing is allocated per call.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace inplace::cpu {

// The largest query-row x head-dim accumulator one pass keeps (rows are processed in chunks).
inline constexpr int64_t kDecodeAttentionMaxRows = 16;
inline constexpr int64_t kDecodeAttentionMaxDim = 256;

struct DecodeAttentionRows {
  const float* q[kDecodeAttentionMaxRows];  // each query row: head_dim contiguous floats
  float* out[kDecodeAttentionMaxRows];      // each output row: head_dim contiguous floats
  int64_t limit[kDecodeAttentionMaxRows];   // row i attends keys [0, limit[i]) (causal: i + 1)
  int64_t count = 0;
};

// out[i] = softmax(scale * q[i] . k[j] for j < limit[i]) @ v for every row; k and v rows are
// `head_dim` contiguous floats, k_stride / v_stride apart, `keys` of them. A row with nothing
// to attend gets zeros (torch's safe softmax).
void decode_attention(const DecodeAttentionRows& rows, const float* k, int64_t k_stride,
                      const float* v, int64_t v_stride, int64_t keys, int64_t head_dim,
                      float scale);
// The same over bfloat16 (or float16) K and V rows, widened 64 rows at a time into float rows that
// the float form's code then reads: its result on their float values, bit for bit.
void decode_attention(const DecodeAttentionRows& rows, const BFloat16* k, int64_t k_stride,
                      const BFloat16* v, int64_t v_stride, int64_t keys, int64_t head_dim,
                      float scale);
void decode_attention(const DecodeAttentionRows& rows, const Half* k, int64_t k_stride,
                      const Half* v, int64_t v_stride, int64_t keys, int64_t head_dim, float scale);

// scaled_dot_product_attention's float32, bfloat16 and float16 cases without a mask or lse (batch
// dims broadcasting as there; query rows sharing one K/V head, as grouped-query attention gives,
// read it once). At a half dtype the caches are read as they lie (no float copy of the whole prefix
// a call) and the result is the float32 case's on the widened operands, rounded once. Returns
// false, touching nothing, where it does not apply.
bool try_decode_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                          double scale, bool is_causal, const Tensor& out, const Tensor& lse);

}  // namespace inplace::cpu
