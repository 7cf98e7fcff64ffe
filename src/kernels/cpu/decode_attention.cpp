#include "kernels/cpu/decode_attention.h"

// The 64-byte vector helpers below are always inlined into functions compiled per instruction set;
// GCC still notes that passing such a vector by value would change the ABI without AVX-512.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/thread_pool.h"
#include "kernels/cpu/reduction_exp.h"

namespace inplace::cpu {

namespace {

constexpr int64_t kBlock = 64;  // keys per block of scores
constexpr int64_t kLanes = 16;
static_assert(kBlock % kLanes == 0, "the block is whole vectors");

// Sixteen floats in GCC's vector extension: one AVX-512 register, two AVX2 ones, four SSE ones,
// whichever target the function is compiled for.
typedef float V16 __attribute__((vector_size(64)));
typedef float V8 __attribute__((vector_size(32)));
typedef float V4 __attribute__((vector_size(16)));

__attribute__((always_inline)) inline V16 load16(const float* p) {
  V16 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// The lanes summed as a tree (four levels, not fifteen dependent adds).
__attribute__((always_inline)) inline float hsum(V16 v) {
  const V8 a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
               __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const V4 b =
      __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
  return (b[0] + b[2]) + (b[1] + b[3]);
}

// Sixteen bfloat16 widened to float (exact: a bfloat16 is a float's upper half).
typedef uint16_t H16 __attribute__((vector_size(32)));
typedef uint32_t W16 __attribute__((vector_size(64)));
__attribute__((always_inline)) inline V16 load16(const BFloat16* p) {
  H16 h;
  std::memcpy(&h, p, sizeof(h));
  const W16 w = __builtin_convertvector(h, W16) << 16;
  V16 v;
  std::memcpy(&v, &w, sizeof(v));
  return v;
}

// b of float, or of bfloat16 widened as it is read: the same products and sums either way.
template <typename U>
__attribute__((always_inline)) inline float dot(const float* a, const U* b, int64_t n) {
  V16 acc0 = {}, acc1 = {};
  int64_t e = 0;
  for (; e + 2 * kLanes <= n; e += 2 * kLanes) {
    acc0 += load16(a + e) * load16(b + e);
    acc1 += load16(a + e + kLanes) * load16(b + e + kLanes);
  }
  for (; e + kLanes <= n; e += kLanes) acc0 += load16(a + e) * load16(b + e);
  float s = hsum(acc0 + acc1);
  for (; e < n; ++e) s += a[e] * static_cast<float>(b[e]);
  return s;
}

// The running softmax state of attend's query rows.
struct AttendState {
  float acc[kDecodeAttentionMaxRows][kDecodeAttentionMaxDim];
  float mx[kDecodeAttentionMaxRows], sum[kDecodeAttentionMaxRows];
  float p[kDecodeAttentionMaxRows][kBlock];
};

// One block of keys [j0, j0 + jn) into the state: kb and vb are the block's first key and value
// rows, kbs and vbs apart, of float or of bfloat16 read as they lie (U); k and v the cache's own
// rows (T), for the prefetches; end the last key any row attends.
template <typename U, typename T>
__attribute__((always_inline)) inline void attend_block(const DecodeAttentionRows& rows,
                                                        AttendState& st, const U* kb, int64_t kbs,
                                                        const U* vb, int64_t vbs, const T* k,
                                                        int64_t k_stride, const T* v,
                                                        int64_t v_stride, int64_t j0, int64_t jn,
                                                        int64_t end, int64_t d, float scale) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t m = rows.count;
  for (int64_t jj = 0; jj < jn; ++jj) {
    const U* kr = kb + jj * kbs;
    // While the scores are worked out, the block's value rows and the next block's key rows
    // are fetched (a cold cache otherwise costs more than the arithmetic).
    const T* vr = v + (j0 + jj) * v_stride;
    const T* kn = k + (j0 + jj + kBlock) * k_stride;
    for (int64_t e = 0; e < d; e += 16) {
      __builtin_prefetch(vr + e);
      if (j0 + kBlock + jj < end) __builtin_prefetch(kn + e);
    }
    for (int64_t i = 0; i < m; ++i)
      st.p[i][jj] = j0 + jj < rows.limit[i] ? scale * dot(rows.q[i], kr, d) : kNegInf;
  }
  for (int64_t i = 0; i < m; ++i) {
    float* p = st.p[i];
    // Lane-wise max and sum (vectorised; a running scalar one would not be). Unused lanes of
    // a short block hold -inf, whose exp is 0.
    for (int64_t jj = jn; jj < kBlock; ++jj) p[jj] = kNegInf;
    float lanes[kLanes];
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] = p[l];
    for (int64_t jj = kLanes; jj < kBlock; jj += kLanes)
      for (int64_t l = 0; l < kLanes; ++l) lanes[l] = std::max(lanes[l], p[jj + l]);
    float bm = kNegInf;
    for (int64_t l = 0; l < kLanes; ++l) bm = std::max(bm, lanes[l]);
    const float nm = std::max(st.mx[i], bm);
    if (nm == kNegInf) {  // nothing attended yet
      for (int64_t jj = 0; jj < jn; ++jj) p[jj] = 0;
      continue;
    }
    const float correction = st.mx[i] == kNegInf ? 0.0f : exp_vectorizable(st.mx[i] - nm);
    // exp(-inf) is 0: a masked key weighs nothing.
    for (int64_t jj = 0; jj < kBlock; ++jj) p[jj] = exp_vectorizable(p[jj] - nm);
    V16 part = load16(p);
    for (int64_t jj = kLanes; jj < kBlock; jj += kLanes) part += load16(p + jj);
    const float s = hsum(part);
    st.sum[i] = st.sum[i] * correction + s;
    st.mx[i] = nm;
    if (correction != 1.0f)
      for (int64_t e = 0; e < d; ++e) st.acc[i][e] *= correction;
  }
  // acc[i] += p[i] @ v_block, 64 columns at a time held in registers across the block's keys
  // (the block's value rows stay in L1 for every row and column chunk).
  for (int64_t i = 0; i < m; ++i) {
    float* acc = st.acc[i];
    const float* p = st.p[i];
    int64_t e = 0;
    for (; e + 4 * kLanes <= d; e += 4 * kLanes) {
      V16 a0 = load16(acc + e), a1 = load16(acc + e + kLanes), a2 = load16(acc + e + 2 * kLanes),
          a3 = load16(acc + e + 3 * kLanes);
      for (int64_t jj = 0; jj < jn; ++jj) {
        const U* vr = vb + jj * vbs + e;
        const float w = p[jj];
        a0 += w * load16(vr);
        a1 += w * load16(vr + kLanes);
        a2 += w * load16(vr + 2 * kLanes);
        a3 += w * load16(vr + 3 * kLanes);
      }
      std::memcpy(acc + e, &a0, sizeof(a0));
      std::memcpy(acc + e + kLanes, &a1, sizeof(a1));
      std::memcpy(acc + e + 2 * kLanes, &a2, sizeof(a2));
      std::memcpy(acc + e + 3 * kLanes, &a3, sizeof(a3));
    }
    for (; e < d; ++e) {
      float a = acc[e];
      for (int64_t jj = 0; jj < jn; ++jj) a += p[jj] * static_cast<float>(vb[jj * vbs + e]);
      acc[e] = a;
    }
  }
}

// K and V rows of float, or of bfloat16 / float16 widened block by block into float rows once for
// all the query rows (exact), after which the same float code runs: the same sums as over float
// copies. One query row a kv head (multi-head attention) reads a bfloat16 block as it lies,
// widened in registers: the same sums again, without writing and reading the copy.
template <typename T>
__attribute__((always_inline)) inline void attend(const DecodeAttentionRows& rows, const T* k,
                                                  int64_t k_stride, const T* v, int64_t v_stride,
                                                  int64_t keys, int64_t d, float scale) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t m = rows.count;
  AttendState st;
  constexpr bool kWiden = !std::is_same_v<T, float>;
  constexpr int64_t kBuf = kWiden ? kBlock * kDecodeAttentionMaxDim : 1;
  float kbuf[kBuf], vbuf[kBuf];  // a block's rows widened (half-dtype caches)
  int64_t end = 0;
  for (int64_t i = 0; i < m; ++i) {
    std::fill(st.acc[i], st.acc[i] + d, 0.0f);
    st.mx[i] = kNegInf;
    st.sum[i] = 0;
    end = std::max(end, std::min(rows.limit[i], keys));
  }
  for (int64_t j = 0; j < std::min(end, kBlock); ++j)  // the first block's keys, all at once
    for (int64_t e = 0; e < d; e += 16) __builtin_prefetch(k + j * k_stride + e);
  const bool as_they_lie = !kWiden || (std::is_same_v<T, BFloat16> && m == 1);
  for (int64_t j0 = 0; j0 < end; j0 += kBlock) {
    const int64_t jn = std::min(kBlock, end - j0);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) {
      if (as_they_lie) {
        attend_block(rows, st, k + j0 * k_stride, k_stride, v + j0 * v_stride, v_stride, k,
                     k_stride, v, v_stride, j0, jn, end, d, scale);
        continue;
      }
    }
    if constexpr (kWiden) {
      for (int64_t jj = 0; jj < jn; ++jj)
        for (int64_t e = 0; e < d; ++e) {
          kbuf[jj * d + e] = static_cast<float>(k[(j0 + jj) * k_stride + e]);
          vbuf[jj * d + e] = static_cast<float>(v[(j0 + jj) * v_stride + e]);
        }
      attend_block(rows, st, static_cast<const float*>(kbuf), d, static_cast<const float*>(vbuf), d,
                   k, k_stride, v, v_stride, j0, jn, end, d, scale);
    }
  }
  for (int64_t i = 0; i < m; ++i) {
    const float inv = st.sum[i] > 0 ? 1.0f / st.sum[i] : 0.0f;
    for (int64_t e = 0; e < d; ++e) rows.out[i][e] = st.acc[i][e] * inv;
  }
}

// The same loop compiled per instruction set, chosen by the CPU's features (no ifunc).
#define IP_ATTEND_FOR(name, target)                                                     \
  template <typename T>                                                                 \
  target void name(const DecodeAttentionRows& rows, const T* k, int64_t ks, const T* v, \
                   int64_t vs, int64_t keys, int64_t d, float scale) {                  \
    attend(rows, k, ks, v, vs, keys, d, scale);                                         \
  }
IP_ATTEND_FOR(attend_avx512, __attribute__((target("avx512f"))))
IP_ATTEND_FOR(attend_avx2, __attribute__((target("avx2,fma"))))
IP_ATTEND_FOR(attend_baseline, )
#undef IP_ATTEND_FOR

const bool kHasAvx512 = __builtin_cpu_supports("avx512f");
const bool kHasAvx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");

template <typename T>
void dispatch(const DecodeAttentionRows& rows, const T* k, int64_t k_stride, const T* v,
              int64_t v_stride, int64_t keys, int64_t head_dim, float scale) {
  if (kHasAvx512)
    attend_avx512(rows, k, k_stride, v, v_stride, keys, head_dim, scale);
  else if (kHasAvx2)
    attend_avx2(rows, k, k_stride, v, v_stride, keys, head_dim, scale);
  else
    attend_baseline(rows, k, k_stride, v, v_stride, keys, head_dim, scale);
}

}  // namespace

void decode_attention(const DecodeAttentionRows& rows, const float* k, int64_t k_stride,
                      const float* v, int64_t v_stride, int64_t keys, int64_t head_dim,
                      float scale) {
  dispatch(rows, k, k_stride, v, v_stride, keys, head_dim, scale);
}

void decode_attention(const DecodeAttentionRows& rows, const BFloat16* k, int64_t k_stride,
                      const BFloat16* v, int64_t v_stride, int64_t keys, int64_t head_dim,
                      float scale) {
  dispatch(rows, k, k_stride, v, v_stride, keys, head_dim, scale);
}

void decode_attention(const DecodeAttentionRows& rows, const Half* k, int64_t k_stride,
                      const Half* v, int64_t v_stride, int64_t keys, int64_t head_dim,
                      float scale) {
  dispatch(rows, k, k_stride, v, v_stride, keys, head_dim, scale);
}

namespace {

constexpr int kMaxBatchDims = 8;
// Below this many key floats a group (4096 keys of head_dim 64 is 256K), a job for the
// context's threads costs more than the group's pass.
constexpr int64_t kParallelMinKeyFloats = 1 << 14;
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

template <typename T>
void attend_all(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal, float sc,
                const Tensor& out) {
  const int64_t L = q.size(-2), E = q.size(-1), S = k.size(-2);
  const int64_t nb = out.dim() - 2;
  const Strides qs = batch_strides(q, nb), ks = batch_strides(k, nb), vs = batch_strides(v, nb),
                os = batch_strides(out, nb);
  const float* qp = q.data<float>();
  const T* kp = k.data<T>();
  const T* vp = v.data<T>();
  float* op = out.data<float>();
  const int64_t q_rs = q.stride(-2), k_rs = k.stride(-2), v_rs = v.stride(-2),
                o_rs = out.stride(-2);
  const int64_t batches = out.numel() / (L * E);

  // Calls at(g, rows, k offset, v offset) for each group g < end in order: the query rows of
  // consecutive batch indices on the same K/V head, at most kDecodeAttentionMaxRows a group.
  // Groups before `begin` are walked over, not attended.
  auto walk = [&](int64_t begin, int64_t end, auto&& at) {
    DecodeAttentionRows rows;
    int64_t group_k = -1, group_v = -1, g = 0;
    auto flush = [&] {
      if (rows.count > 0) {
        if (g >= begin) at(rows, group_k, group_v);
        ++g;
      }
      rows.count = 0;
    };
    std::array<int64_t, kMaxBatchDims> idx{};
    int64_t qo = 0, ko = 0, vo = 0, oo = 0;
    for (int64_t b = 0; b < batches && g < end; ++b) {
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
    if (g < end) flush();
    return g;
  };
  auto attend_group = [&](const DecodeAttentionRows& rows, int64_t ko, int64_t vo) {
    decode_attention(rows, kp + ko, k_rs, vp + vo, v_rs, S, E, sc);
  };
  constexpr int64_t kAll = std::numeric_limits<int64_t>::max();
  ThreadPool* pool = current_thread_pool();
  // Groups are independent (each writes its own rows, in the same order of sums whoever runs
  // it): split over the context's threads where a group reads enough keys to pay for a job.
  if (pool == nullptr || pool->threads() < 2 || S * E < kParallelMinKeyFloats) {
    walk(0, kAll, attend_group);
    return;
  }
  const int64_t groups = walk(0, kAll, [](const DecodeAttentionRows&, int64_t, int64_t) {});
  const int64_t tasks = std::min<int64_t>(groups, pool->threads() * 2);
  auto task = [&](int64_t t) { walk(groups * t / tasks, groups * (t + 1) / tasks, attend_group); };
  pool->parallel_for(tasks, task);
}

}  // namespace

bool try_decode_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                          double scale, bool is_causal, const Tensor& out, const Tensor& lse) {
  if (mask.defined() || lse.defined()) return false;
  const DType dt = q.dtype();
  if (dt != DType::kFloat32 && dt != DType::kBFloat16 && dt != DType::kFloat16) return false;
  for (const Tensor* t : {&q, &k, &v, &out})
    if (t->dtype() != dt || t->dim() < 2 || t->stride(-1) != 1 || t->dim() - 2 > out.dim() - 2)
      return false;
  const int64_t L = q.size(-2), E = q.size(-1), S = k.size(-2);
  if (E != v.size(-1) || E > kDecodeAttentionMaxDim || out.size(-1) != E || out.size(-2) != L)
    return false;
  const int64_t nb = out.dim() - 2;
  if (nb > kMaxBatchDims) return false;
  if (out.numel() == 0) return true;
  if (dt != DType::kFloat32) {
    // The query rows and results as float (a few rows); the caches are read as they lie,
    // widened block by block. The same sums as over float copies of every operand, the result
    // rounded to the dtype once.
    const Tensor qf = q.to(DType::kFloat32), of = Tensor::empty(out.shape(), DType::kFloat32);
    if (dt == DType::kBFloat16)
      attend_all<BFloat16>(qf, k, v, is_causal, static_cast<float>(scale), of);
    else
      attend_all<Half>(qf, k, v, is_causal, static_cast<float>(scale), of);
    out.copy_from(of);
    return true;
  }
  attend_all<float>(q, k, v, is_causal, static_cast<float>(scale), out);
  return true;
}

}  // namespace inplace::cpu
