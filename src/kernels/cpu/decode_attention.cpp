#include "kernels/cpu/decode_attention.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "kernels/cpu/reduction_exp.h"

namespace inplace::cpu {

namespace {

constexpr int64_t kBlock = 64;  // keys per block of scores
constexpr int64_t kLanes = 16;

// Independent lanes vectorise without reassociating the sum.
__attribute__((always_inline)) inline float dot(const float* a, const float* b, int64_t n) {
  float part[kLanes] = {};
  const int64_t nv = n - n % kLanes;
  for (int64_t e = 0; e < nv; e += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) part[l] += a[e + l] * b[e + l];
  float s = 0;
  for (int64_t l = 0; l < kLanes; ++l) s += part[l];
  for (int64_t e = nv; e < n; ++e) s += a[e] * b[e];
  return s;
}

__attribute__((always_inline)) inline void attend(const DecodeAttentionRows& rows, const float* k,
                                                  int64_t k_stride, const float* v,
                                                  int64_t v_stride, int64_t keys, int64_t d,
                                                  float scale) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t m = rows.count;
  float acc[kDecodeAttentionMaxRows][kDecodeAttentionMaxDim];
  float mx[kDecodeAttentionMaxRows], sum[kDecodeAttentionMaxRows];
  float p[kDecodeAttentionMaxRows][kBlock];
  int64_t end = 0;
  for (int64_t i = 0; i < m; ++i) {
    std::fill(acc[i], acc[i] + d, 0.0f);
    mx[i] = kNegInf;
    sum[i] = 0;
    end = std::max(end, std::min(rows.limit[i], keys));
  }
  for (int64_t j0 = 0; j0 < end; j0 += kBlock) {
    const int64_t jn = std::min(kBlock, end - j0);
    for (int64_t jj = 0; jj < jn; ++jj) {
      const float* kr = k + (j0 + jj) * k_stride;
      for (int64_t i = 0; i < m; ++i)
        p[i][jj] = j0 + jj < rows.limit[i] ? scale * dot(rows.q[i], kr, d) : kNegInf;
    }
    for (int64_t i = 0; i < m; ++i) {
      float bm = kNegInf;
      for (int64_t jj = 0; jj < jn; ++jj) bm = std::max(bm, p[i][jj]);
      const float nm = std::max(mx[i], bm);
      if (nm == kNegInf) {  // nothing attended yet
        for (int64_t jj = 0; jj < jn; ++jj) p[i][jj] = 0;
        continue;
      }
      const float correction = mx[i] == kNegInf ? 0.0f : exp_vectorizable(mx[i] - nm);
      float s = 0;
      for (int64_t jj = 0; jj < jn; ++jj) {
        p[i][jj] = p[i][jj] == kNegInf ? 0.0f : exp_vectorizable(p[i][jj] - nm);
        s += p[i][jj];
      }
      sum[i] = sum[i] * correction + s;
      mx[i] = nm;
      if (correction != 1.0f)
        for (int64_t e = 0; e < d; ++e) acc[i][e] *= correction;
    }
    for (int64_t jj = 0; jj < jn; ++jj) {
      const float* vr = v + (j0 + jj) * v_stride;
      for (int64_t i = 0; i < m; ++i) {
        const float w = p[i][jj];
        for (int64_t e = 0; e < d; ++e) acc[i][e] += w * vr[e];
      }
    }
  }
  for (int64_t i = 0; i < m; ++i) {
    const float inv = sum[i] > 0 ? 1.0f / sum[i] : 0.0f;
    for (int64_t e = 0; e < d; ++e) rows.out[i][e] = acc[i][e] * inv;
  }
}

// The same loop compiled per instruction set, chosen by the CPU's features (no ifunc).
#define IP_ATTEND_FOR(name, target)                                                             \
  target void name(const DecodeAttentionRows& rows, const float* k, int64_t ks, const float* v, \
                   int64_t vs, int64_t keys, int64_t d, float scale) {                          \
    attend(rows, k, ks, v, vs, keys, d, scale);                                                 \
  }
IP_ATTEND_FOR(attend_avx512, __attribute__((target("avx512f"))))
IP_ATTEND_FOR(attend_avx2, __attribute__((target("avx2,fma"))))
IP_ATTEND_FOR(attend_baseline, )
#undef IP_ATTEND_FOR

const bool kHasAvx512 = __builtin_cpu_supports("avx512f");
const bool kHasAvx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");

}  // namespace

void decode_attention(const DecodeAttentionRows& rows, const float* k, int64_t k_stride,
                      const float* v, int64_t v_stride, int64_t keys, int64_t head_dim,
                      float scale) {
  if (kHasAvx512)
    attend_avx512(rows, k, k_stride, v, v_stride, keys, head_dim, scale);
  else if (kHasAvx2)
    attend_avx2(rows, k, k_stride, v, v_stride, keys, head_dim, scale);
  else
    attend_baseline(rows, k, k_stride, v, v_stride, keys, head_dim, scale);
}

namespace {

constexpr int kMaxBatchDims = 8;
using Strides = std::array<int64_t, kMaxBatchDims>;

// t's strides over the batch dims of out (0 where t broadcasts); t is right-aligned.
Strides batch_strides(const Tensor& t, int64_t nb) {
  Strides s{};
  const int64_t lead = nb - (t.dim() - 2);
  for (int64_t d = 0; d < nb; ++d) {
    const int64_t td = d - lead;
    s[static_cast<size_t>(d)] = td < 0 || t.size(td) == 1 ? 0 : t.stride(td);
  }
  return s;
}

}  // namespace

bool try_decode_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                          double scale, bool is_causal, const Tensor& out, const Tensor& lse) {
  if (mask.defined() || lse.defined()) return false;
  for (const Tensor* t : {&q, &k, &v, &out})
    if (t->dtype() != DType::kFloat32 || t->dim() < 2 || t->stride(-1) != 1 ||
        t->dim() - 2 > out.dim() - 2)
      return false;
  const int64_t L = q.size(-2), E = q.size(-1), S = k.size(-2);
  if (E != v.size(-1) || E > kDecodeAttentionMaxDim || out.size(-1) != E || out.size(-2) != L)
    return false;
  const int64_t nb = out.dim() - 2;
  if (nb > kMaxBatchDims) return false;
  if (out.numel() == 0) return true;
  const Strides qs = batch_strides(q, nb), ks = batch_strides(k, nb), vs = batch_strides(v, nb),
                os = batch_strides(out, nb);
  const float* qp = q.data<float>();
  const float* kp = k.data<float>();
  const float* vp = v.data<float>();
  float* op = out.data<float>();
  const int64_t q_rs = q.stride(-2), k_rs = k.stride(-2), v_rs = v.stride(-2),
                o_rs = out.stride(-2);
  const auto sc = static_cast<float>(scale);

  DecodeAttentionRows rows;
  int64_t group_k = -1, group_v = -1;
  auto flush = [&] {
    if (rows.count > 0) decode_attention(rows, kp + group_k, k_rs, vp + group_v, v_rs, S, E, sc);
    rows.count = 0;
  };
  // Walk the batch indices in order; consecutive ones on the same K/V head share one pass.
  std::array<int64_t, kMaxBatchDims> idx{};
  int64_t qo = 0, ko = 0, vo = 0, oo = 0;
  const int64_t batches = out.numel() / (L * E);
  for (int64_t b = 0; b < batches; ++b) {
    if (ko != group_k || vo != group_v) {
      flush();
      group_k = ko;
      group_v = vo;
    }
    for (int64_t i = 0; i < L; ++i) {
      if (rows.count == kDecodeAttentionMaxRows) flush();
      rows.q[rows.count] = qp + qo + i * q_rs;
      rows.out[rows.count] = op + oo + i * o_rs;
      rows.limit[rows.count] = is_causal ? std::min(i + 1, S) : S;
      ++rows.count;
    }
    for (int64_t d = nb - 1; d >= 0; --d) {  // next batch index
      const auto u = static_cast<size_t>(d);
      qo += qs[u], ko += ks[u], vo += vs[u], oo += os[u];
      if (++idx[u] < out.size(d)) break;
      qo -= qs[u] * idx[u], ko -= ks[u] * idx[u], vo -= vs[u] * idx[u], oo -= os[u] * idx[u];
      idx[u] = 0;
    }
  }
  flush();
  return true;
}

}  // namespace inplace::cpu
