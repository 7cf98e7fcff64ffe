// scaled_dot_product_attention against a naive float64 implementation written here.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "test_util.h"

namespace inplace::testing {
namespace {

Tensor random_tensor(const Shape& s, DType dt, std::mt19937& g) {
  std::normal_distribution<double> u(0, 1);
  Tensor t = Tensor::empty(s, DType::kFloat64);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = u(g);
  return t.to(dt);
}

Tensor random_bool(const Shape& s, std::mt19937& g) {
  Tensor t = Tensor::empty(s, DType::kBool);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<bool>()[i] = g() % 3 != 0;
  return t;
}

Shape bshape(const Shape& a, const Shape& b) {
  return broadcast_shapes(a, b, "ref");
}
Shape batch_of(const Tensor& t) {
  return Shape(t.shape().begin(), t.shape().end() - std::min<int64_t>(t.dim(), 2));
}

// t at the right-aligned, broadcast multi-index idx; `head_div` divides the head index (dim -3)
// for grouped-query key/value.
double bget(const Tensor& t, const std::vector<int64_t>& idx, int64_t head_div = 1) {
  int64_t flat = 0;
  const size_t lead = idx.size() - t.shape().size();
  for (size_t d = 0; d < t.shape().size(); ++d) {
    int64_t i = idx[lead + d];
    if (head_div > 1 && d + 3 == t.shape().size()) i /= head_div;
    flat = flat * t.shape()[d] + (t.shape()[d] == 1 ? 0 : i);
  }
  return t.at(flat);
}

struct Ref {
  Shape shape;
  std::vector<double> values, lse;
};

Ref ref_sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
             double scale, int64_t group = 1) {
  const int64_t L = q.size(-2), E = q.size(-1), S = k.size(-2), Ev = v.size(-1);
  Shape kb = batch_of(k), vb = batch_of(v);
  if (group > 1) {
    kb[kb.size() - 1] *= group;
    vb[vb.size() - 1] *= group;
  }
  Shape batch = bshape(bshape(batch_of(q), kb), vb);
  if (mask.defined()) batch = bshape(batch, batch_of(mask));
  Ref r;
  r.shape = batch;
  r.shape.push_back(L);
  r.shape.push_back(Ev);
  const size_t nb = batch.size();
  for (int64_t bi = 0; bi < numel_of(batch); ++bi) {
    std::vector<int64_t> idx(nb + 2);
    int64_t rem = bi;
    for (int64_t d = static_cast<int64_t>(nb) - 1; d >= 0; --d) {
      idx[d] = rem % batch[d];
      rem /= batch[d];
    }
    for (int64_t i = 0; i < L; ++i) {
      std::vector<double> w(S);
      for (int64_t j = 0; j < S; ++j) {
        double s = 0;
        for (int64_t e = 0; e < E; ++e) {
          idx[nb] = i, idx[nb + 1] = e;
          const double qv = bget(q, idx);
          idx[nb] = j;
          s += qv * bget(k, idx, group);
        }
        s *= scale;
        idx[nb] = i, idx[nb + 1] = j;
        if (mask.defined()) {
          const double m = bget(mask, idx);
          if (mask.dtype() == DType::kBool)
            s = m != 0 ? s : -INFINITY;
          else
            s += m;
        }
        if (causal && j > i) s = -INFINITY;
        w[j] = s;
      }
      double mx = -INFINITY, sum = 0;
      for (double s : w) mx = std::max(mx, s);
      for (double& s : w) sum += (s = mx == -INFINITY ? 0 : std::exp(s - mx));
      r.lse.push_back(mx == -INFINITY ? -INFINITY : mx + std::log(sum));
      for (int64_t c = 0; c < Ev; ++c) {
        double o = 0;
        for (int64_t j = 0; j < S; ++j) {
          idx[nb] = j, idx[nb + 1] = c;
          if (sum > 0) o += w[j] / sum * bget(v, idx, group);
        }
        r.values.push_back(o);
      }
    }
  }
  return r;
}

const char* kSdpa = "torch.nn.functional.scaled_dot_product_attention";

TEST(Attention, PlainAndScaled) {
  std::mt19937 g(51);
  for (DType dt : {DType::kFloat32, DType::kFloat64}) {
    const double tol = dt == DType::kFloat32 ? 2e-6 : 1e-12;
    Tensor q = random_tensor({2, 3, 5, 8}, dt, g), k = random_tensor({2, 3, 7, 8}, dt, g),
           v = random_tensor({2, 3, 7, 4}, dt, g);
    Ref r = ref_sdpa(q, k, v, Tensor(), false, 1 / std::sqrt(8.0));
    Tensor got = call_t(kSdpa, {T(q), T(k), T(v)});
    EXPECT_EQ(got.dtype(), dt);
    EXPECT_TRUE(tensor_near(got, r.shape, r.values, tol)) << dtype_name(dt);
    Ref rs = ref_sdpa(q, k, v, Tensor(), false, 0.3);
    EXPECT_TRUE(tensor_near(call_t(kSdpa, {T(q), T(k), T(v)}, {{"scale", F(0.3)}}), rs.shape,
                            rs.values, tol));
  }
}

TEST(Attention, MasksAndCausal) {
  std::mt19937 g(52);
  Tensor q = random_tensor({2, 4, 6}, DType::kFloat32, g),
         k = random_tensor({2, 9, 6}, DType::kFloat32, g),
         v = random_tensor({2, 9, 3}, DType::kFloat32, g);
  Tensor bm = random_bool({4, 9}, g);  // broadcast over batch
  Ref rb = ref_sdpa(q, k, v, bm, false, 1 / std::sqrt(6.0));
  EXPECT_TRUE(tensor_near(call_t(kSdpa, {T(q), T(k), T(v)}, {{"attn_mask", T(bm)}}), rb.shape,
                          rb.values, 2e-6));
  Tensor fm = random_tensor({2, 1, 9}, DType::kFloat32, g);  // per-batch key bias
  Ref rf = ref_sdpa(q, k, v, fm, false, 1 / std::sqrt(6.0));
  EXPECT_TRUE(tensor_near(call_t(kSdpa, {T(q), T(k), T(v), T(fm)}), rf.shape, rf.values, 2e-6));
  // Causal with L < S and L > S: top-left aligned (row i sees keys j <= i).
  Ref rc = ref_sdpa(q, k, v, Tensor(), true, 1 / std::sqrt(6.0));
  EXPECT_TRUE(tensor_near(call_t(kSdpa, {T(q), T(k), T(v)}, {{"is_causal", B(true)}}), rc.shape,
                          rc.values, 2e-6));
  Tensor q2 = random_tensor({2, 9, 6}, DType::kFloat32, g),
         k2 = random_tensor({2, 4, 6}, DType::kFloat32, g),
         v2 = random_tensor({2, 4, 3}, DType::kFloat32, g);
  Ref rc2 = ref_sdpa(q2, k2, v2, Tensor(), true, 0.5);
  EXPECT_TRUE(
      tensor_near(call_t("aten.scaled_dot_product_attention.default",
                         {T(q2), T(k2), T(v2), None(), F(0.0), B(true)}, {{"scale", F(0.5)}}),
                  rc2.shape, rc2.values, 2e-6));
  // A row that may attend to nothing gives zeros (torch's safe softmax), not NaN.
  Tensor none = Tensor::full({4, 9}, Scalar(false), DType::kBool);
  Tensor z = call_t(kSdpa, {T(q), T(k), T(v), T(none)});
  EXPECT_TRUE(tensor_near(z, {2, 4, 3}, std::vector<double>(24, 0.0)));
}

TEST(Attention, BatchBroadcastAndGqa) {
  std::mt19937 g(53);
  Tensor q = random_tensor({2, 1, 3, 4}, DType::kFloat64, g),
         k = random_tensor({3, 5, 4}, DType::kFloat64, g),
         v = random_tensor({1, 3, 5, 2}, DType::kFloat64, g);
  Ref r = ref_sdpa(q, k, v, Tensor(), false, 0.5);
  EXPECT_TRUE(tensor_near(call_t(kSdpa, {T(q), T(k), T(v)}, {{"scale", F(0.5)}}), r.shape, r.values,
                          1e-12));
  Tensor m = random_tensor({4, 1, 3, 5}, DType::kFloat64, g);  // the mask widens the batch
  Tensor q1 = random_tensor({3, 3, 4}, DType::kFloat64, g);
  Ref rm = ref_sdpa(q1, k, v, m, false, 0.5);
  Tensor gm = call_t(kSdpa, {T(q1), T(k), T(v), T(m)}, {{"scale", F(0.5)}});
  EXPECT_EQ(gm.shape(), (Shape{4, 3, 3, 2}));
  EXPECT_TRUE(tensor_near(gm, rm.shape, rm.values, 1e-12));
  // Grouped-query attention: 6 query heads over 2 key/value heads, non-contiguous key.
  Tensor gq = random_tensor({2, 6, 3, 4}, DType::kFloat32, g);
  Tensor gk = random_tensor({2, 5, 2, 4}, DType::kFloat32, g).transpose(1, 2);  // [2,2,5,4]
  Tensor gv = random_tensor({2, 2, 5, 3}, DType::kFloat32, g);
  Tensor gmask = random_bool({6, 3, 5}, g);
  Ref rg = ref_sdpa(gq, gk, gv, gmask, false, 0.5, 3);
  Tensor got =
      call_t(kSdpa, {T(gq), T(gk), T(gv), T(gmask)}, {{"scale", F(0.5)}, {"enable_gqa", B(true)}});
  EXPECT_EQ(got.shape(), (Shape{2, 6, 3, 3}));
  EXPECT_TRUE(tensor_near(got, rg.shape, rg.values, 2e-6));
}

TEST(Attention, HalfTypes) {
  std::mt19937 g(54);
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    Tensor q = random_tensor({2, 3, 8}, dt, g), k = random_tensor({2, 6, 8}, dt, g),
           v = random_tensor({2, 6, 8}, dt, g);
    Ref r = ref_sdpa(q, k, v, Tensor(), true, 1 / std::sqrt(8.0));
    Tensor got = call_t(kSdpa, {T(q), T(k), T(v)}, {{"is_causal", B(true)}});
    EXPECT_EQ(got.dtype(), dt);
    EXPECT_TRUE(tensor_near(got, r.shape, r.values, dt == DType::kFloat16 ? 2e-3 : 1.6e-2));
  }
}

TEST(Attention, FlashForCpuReturnsLogSumExp) {
  std::mt19937 g(55);
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kFloat16}) {
    Tensor q = random_tensor({2, 3, 4, 8}, dt, g), k = random_tensor({2, 3, 6, 8}, dt, g),
           v = random_tensor({2, 3, 6, 5}, dt, g);
    Tensor m = random_tensor({4, 6}, dt, g);
    Ref r = ref_sdpa(q, k, v, m, false, 0.25);
    Value res = call("aten._scaled_dot_product_flash_attention_for_cpu.default", {T(q), T(k), T(v)},
                     {{"attn_mask", T(m)}, {"scale", F(0.25)}});
    ASSERT_EQ(res.items.size(), 2u);
    const double tol = dt == DType::kFloat64 ? 1e-12 : dt == DType::kFloat32 ? 2e-6 : 2e-3;
    EXPECT_TRUE(tensor_near(res.items[0].tensor, r.shape, r.values, tol)) << dtype_name(dt);
    const Tensor& lse = res.items[1].tensor;
    EXPECT_EQ(lse.dtype(), dt == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32);
    EXPECT_TRUE(tensor_near(lse, {2, 3, 4}, r.lse, dt == DType::kFloat64 ? 1e-12 : 2e-6));
    Ref rc = ref_sdpa(q, k, v, Tensor(), true, 1 / std::sqrt(8.0));
    Value rcs = call("aten._scaled_dot_product_flash_attention_for_cpu.default",
                     {T(q), T(k), T(v), F(0.0), B(true)});
    EXPECT_TRUE(tensor_near(rcs.items[0].tensor, rc.shape, rc.values, tol));
    EXPECT_TRUE(
        tensor_near(rcs.items[1].tensor, {2, 3, 4}, rc.lse, dt == DType::kFloat64 ? 1e-12 : 2e-6));
  }
  EXPECT_THROW(call("aten._scaled_dot_product_flash_attention_for_cpu.default",
                    {T(iota({3, 4})), T(iota({5, 4})), T(iota({5, 4}))}),
               Error);
}

TEST(Attention, Errors) {
  Tensor q = iota({2, 3, 4}), k = iota({2, 5, 4}), v = iota({2, 5, 6});
  std::string e = error_of([&] { call(kSdpa, {T(q), T(k), T(v)}, {{"dropout_p", F(0.1)}}); });
  EXPECT_NE(e.find("[scaled_dot_product_attention] dropout_p must be 0"), std::string::npos) << e;
  e = error_of([&] { call(kSdpa, {T(q), T(iota({2, 5, 3})), T(v)}); });
  EXPECT_NE(e.find("query [2,3,4] and key [2,5,3]"), std::string::npos) << e;
  e = error_of([&] { call(kSdpa, {T(q), T(k), T(iota({2, 4, 6}))}); });
  EXPECT_NE(e.find("key [2,5,4] and value [2,4,6]"), std::string::npos) << e;
  e = error_of([&] { call(kSdpa, {T(q), T(k), T(v), T(iota({3, 4}))}); });
  EXPECT_NE(e.find("attn_mask [3,4]"), std::string::npos) << e;
  e = error_of([&] { call(kSdpa, {T(q), T(k), T(v), T(iota({3, 5}))}, {{"is_causal", B(true)}}); });
  EXPECT_NE(e.find("[scaled_dot_product_attention]"), std::string::npos) << e;
  e = error_of([&] { call(kSdpa, {T(q), T(k.to(DType::kFloat64)), T(v)}); });
  EXPECT_NE(e.find("float32, float64"), std::string::npos) << e;
  e = error_of([&] {
    call(kSdpa, {T(iota({1, 4, 3, 4})), T(iota({1, 3, 5, 4})), T(iota({1, 3, 5, 4}))},
         {{"enable_gqa", B(true)}});
  });
  EXPECT_NE(e.find("heads"), std::string::npos) << e;
}

}  // namespace
}  // namespace inplace::testing
