// Scaled dot-product attention, one (L x S) score matrix per batch index: two gemms around a
// masked row softmax. Half types compute in float.
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/strided_loop.h"
#include "kernels/cpu/decode_attention.h"
#include "kernels/cpu/matrix.h"
#include "kernels/cpu/nn.h"
#include "kernels/cpu/reduction_exp.h"

namespace inplace::cpu {

namespace {

// Strides of t broadcast to batch + [rows, cols], split into the batch part and the matrix part.
struct Broadcast {
  Shape batch;
  int64_t rs = 0, cs = 0;
};

Broadcast broadcast_to(const Tensor& t, const Shape& batch, int64_t rows, int64_t cols) {
  Shape full = batch;
  full.push_back(rows);
  full.push_back(cols);
  Shape st = broadcast_strides(t, full, "scaled_dot_product_attention");
  Broadcast b;
  b.batch.assign(st.begin(), st.end() - 2);
  b.rs = st[st.size() - 2];
  b.cs = st[st.size() - 1];
  return b;
}

template <typename C>
void attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale,
               bool is_causal, const Tensor& out, const Tensor& lse) {
  const int64_t L = q.size(-2), E = q.size(-1), S = k.size(-2), Ev = v.size(-1);
  const Shape batch(out.shape().begin(), out.shape().end() - 2);
  const Broadcast bq = broadcast_to(q, batch, L, E), bk = broadcast_to(k, batch, S, E),
                  bv = broadcast_to(v, batch, S, Ev), bo = broadcast_to(out, batch, L, Ev);
  const Broadcast bm =
      mask.defined() ? broadcast_to(mask, batch, L, S) : Broadcast{Shape(batch.size(), 0), 0, 0};
  const bool bool_mask = mask.defined() && mask.dtype() == DType::kBool;
  const C* qp = q.data<C>();
  const C* kp = k.data<C>();
  const C* vp = v.data<C>();
  C* op = out.data<C>();
  const bool* mbp = bool_mask ? mask.data<bool>() : nullptr;
  const C* mfp = mask.defined() && !bool_mask ? mask.data<C>() : nullptr;
  std::vector<C> scores(static_cast<size_t>(L * S));
  constexpr C kNegInf = -std::numeric_limits<C>::infinity();

  const size_t nb = batch.size();
  const Shape lse_bs =
      lse.defined() ? Shape(lse.strides().begin(), lse.strides().begin() + nb) : Shape(nb, 0);
  const int64_t lse_rs = lse.defined() ? lse.stride(-1) : 0;
  auto store_lse = [&](int64_t lo, int64_t i, double v) {
    if (!lse.defined()) return;
    if (lse.dtype() == DType::kFloat64)
      lse.data<double>()[lo + i * lse_rs] = v;
    else
      lse.data<float>()[lo + i * lse_rs] = static_cast<float>(v);
  };

  auto one = [&](int64_t qo, int64_t ko, int64_t vo, int64_t mo, int64_t oo, int64_t lo) {
    // scores = scale * q @ k^T (k read as its transpose: rows E, cols S).
    gemm(MatrixRef<const C>{qp + qo, L, E, bq.rs, bq.cs},
         MatrixRef<const C>{kp + ko, E, S, bk.cs, bk.rs}, MatrixRef<C>{scores.data(), L, S, S, 1},
         static_cast<C>(scale), C(0));
    for (int64_t i = 0; i < L; ++i) {
      C* row = scores.data() + i * S;
      if (mbp) {
        for (int64_t j = 0; j < S; ++j)
          if (!mbp[mo + i * bm.rs + j * bm.cs]) row[j] = kNegInf;
      } else if (mfp) {
        for (int64_t j = 0; j < S; ++j) row[j] += mfp[mo + i * bm.rs + j * bm.cs];
      }
      if (is_causal)
        for (int64_t j = i + 1; j < S; ++j) row[j] = kNegInf;
      C mx = kNegInf;
      for (int64_t j = 0; j < S; ++j) mx = row[j] > mx ? row[j] : mx;
      if (mx == kNegInf) {  // nothing to attend: zeros, not NaN
        for (int64_t j = 0; j < S; ++j) row[j] = C(0);
        store_lse(lo, i, -std::numeric_limits<double>::infinity());
        continue;
      }
      double sum = 0;
      if constexpr (std::is_same_v<C, float>) {
        for (int64_t j = 0; j < S; ++j) row[j] = exp_vectorizable(row[j] - mx);
      } else {
        for (int64_t j = 0; j < S; ++j) row[j] = std::exp(row[j] - mx);
      }
      for (int64_t j = 0; j < S; ++j) sum += row[j];
      const double inv = 1.0 / sum;
      store_lse(lo, i, static_cast<double>(mx) + std::log(sum));
      for (int64_t j = 0; j < S; ++j) row[j] = static_cast<C>(row[j] * inv);
    }
    gemm(MatrixRef<const C>{scores.data(), L, S, S, 1},
         MatrixRef<const C>{vp + vo, S, Ev, bv.rs, bv.cs}, MatrixRef<C>{op + oo, L, Ev, bo.rs, 1},
         C(1), C(0));
  };

  if (out.numel() == 0) return;
  strided_loop<6>(
      batch, {bq.batch, bk.batch, bv.batch, bm.batch, bo.batch, lse_bs},
      [&](const std::array<int64_t, 6>& off, int64_t cnt, const std::array<int64_t, 6>& st) {
        for (int64_t j = 0; j < cnt; ++j)
          one(off[0] + j * st[0], off[1] + j * st[1], off[2] + j * st[2], off[3] + j * st[3],
              off[4] + j * st[4], off[5] + j * st[5]);
      });
}

}  // namespace

void scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& mask, double scale, bool is_causal,
                                  const Tensor& out, const Tensor& lse) {
  IP_ASSERT(!lse.defined() || (lse.dim() == out.dim() - 1 && is_floating(lse.dtype())),
            "attention lse holds one value per query row");
  IP_ASSERT(q.dtype() == k.dtype() && q.dtype() == v.dtype() && q.dtype() == out.dtype() &&
                is_floating(q.dtype()),
            "attention operands share a floating dtype");
  if (try_decode_attention(q, k, v, mask, scale, is_causal, out, lse)) return;
  const DType compute = q.dtype() == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  Tensor m = mask;
  if (m.defined() && m.dtype() != DType::kBool) m = m.to(compute);
  Tensor o = out;
  if (compute != out.dtype() || out.stride(-1) != 1) o = Tensor::empty(out.shape(), compute);
  if (compute == DType::kFloat64)
    attention<double>(q, k, v, m, scale, is_causal, o, lse);
  else
    attention<float>(q.to(compute), k.to(compute), v.to(compute), m, scale, is_causal, o, lse);
  if (o.data_ptr() != out.data_ptr()) out.copy_from(o);
}

}  // namespace inplace::cpu
