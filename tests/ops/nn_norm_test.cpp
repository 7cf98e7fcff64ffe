// layer_norm, native_layer_norm, rms_norm and dropout against float64 references written here.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "test_util.h"

namespace inplace::testing {
namespace {

Tensor random_tensor(const Shape& s, DType dt, std::mt19937& g, double mean = 0, double sd = 2) {
  std::normal_distribution<double> u(mean, sd);
  Tensor t = Tensor::empty(s, DType::kFloat64);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = u(g);
  return t.to(dt);
}

// Normalises each row of the trailing n elements from the definition; rms when `rms`.
struct NormRef {
  std::vector<double> out, mean, rstd;
};
NormRef ref_norm(const Tensor& x, int64_t n, const Tensor& w, const Tensor& b, double eps,
                 bool rms) {
  const std::vector<double> v = x.to_double_vector();
  NormRef r;
  const int64_t rows = x.numel() / n;
  for (int64_t i = 0; i < rows; ++i) {
    double mu = 0, sq = 0;
    for (int64_t j = 0; j < n; ++j) mu += v[i * n + j] / n;
    for (int64_t j = 0; j < n; ++j) {
      const double d = rms ? v[i * n + j] : v[i * n + j] - mu;
      sq += d * d / n;
    }
    const double rs = 1 / std::sqrt(sq + eps);
    r.mean.push_back(mu);
    r.rstd.push_back(rs);
    for (int64_t j = 0; j < n; ++j) {
      double y = ((rms ? 0 : -mu) + v[i * n + j]) * rs;
      if (w.defined()) y *= w.at(j);
      if (b.defined()) y += b.at(j);
      r.out.push_back(y);
    }
  }
  return r;
}

TEST(LayerNorm, MatchesReference) {
  std::mt19937 g(41);
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    const double tol = dt == DType::kFloat32   ? 1e-6
                       : dt == DType::kFloat64 ? 1e-12
                       : dt == DType::kFloat16 ? 2e-3
                                               : 1.6e-2;
    Tensor x = random_tensor({3, 4, 6}, dt, g, 5.0, 3.0);
    Tensor w = random_tensor({6}, dt, g), b = random_tensor({6}, dt, g);
    NormRef r = ref_norm(x, 6, w, b, 1e-5, false);
    Tensor got = call_t("torch.nn.functional.layer_norm", {T(x), Tup({I(6)})},
                        {{"weight", T(w)}, {"bias", T(b)}, {"eps", F(1e-5)}});
    EXPECT_EQ(got.dtype(), dt);
    EXPECT_TRUE(tensor_near(got, x.shape(), r.out, tol)) << dtype_name(dt);
    NormRef r0 = ref_norm(x, 24, Tensor(), Tensor(), 1e-5, false);
    EXPECT_TRUE(tensor_near(call_t("layer_norm", {T(x), L({I(4), I(6)})}), x.shape(), r0.out, tol));
  }
}

TEST(LayerNorm, NonContiguousAndLargeOffset) {
  std::mt19937 g(42);
  // A large mean over a small spread: a one-pass float variance would lose most digits.
  Tensor base = random_tensor({8, 5}, DType::kFloat32, g, 1e4, 0.5);
  Tensor x = base.t();  // [5,8]
  Tensor w = random_tensor({8}, DType::kFloat32, g).unsqueeze(0).expand({2, 8}).select(0, 1);
  NormRef r = ref_norm(x.contiguous(), 8, w, Tensor(), 1e-6, false);
  Tensor got = call_t("aten.layer_norm.default", {T(x), L({I(8)}), T(w), None(), F(1e-6)});
  EXPECT_TRUE(tensor_near(got, {5, 8}, r.out, 1e-5));
}

TEST(LayerNorm, NativeLayerNormStatistics) {
  std::mt19937 g(43);
  Tensor x = random_tensor({2, 3, 4}, DType::kFloat64, g);
  Tensor w = random_tensor({3, 4}, DType::kFloat64, g),
         b = random_tensor({3, 4}, DType::kFloat64, g);
  Value res = call("aten.native_layer_norm.default", {T(x), L({I(3), I(4)}), T(w), T(b), F(1e-5)});
  ASSERT_EQ(res.kind, Value::Kind::kTuple);
  ASSERT_EQ(res.items.size(), 3u);
  NormRef r = ref_norm(x, 12, w, b, 1e-5, false);
  EXPECT_TRUE(tensor_near(res.items[0].tensor, {2, 3, 4}, r.out, 1e-12));
  EXPECT_TRUE(tensor_near(res.items[1].tensor, {2, 1, 1}, r.mean, 1e-12));
  EXPECT_TRUE(tensor_near(res.items[2].tensor, {2, 1, 1}, r.rstd, 1e-12));
  // None weight/bias.
  Value nb = call("native_layer_norm", {T(x), L({I(4)}), None(), None(), F(1e-5)});
  NormRef r4 = ref_norm(x, 4, Tensor(), Tensor(), 1e-5, false);
  EXPECT_TRUE(tensor_near(nb.items[0].tensor, {2, 3, 4}, r4.out, 1e-12));
  EXPECT_TRUE(tensor_near(nb.items[2].tensor, {2, 3, 1}, r4.rstd, 1e-12));
}

TEST(LayerNorm, Errors) {
  Tensor x = iota({2, 3});
  std::string e = error_of([&] { call("layer_norm", {T(x), L({I(4)})}); });
  EXPECT_NE(
      e.find("[layer_norm] normalized_shape [4] does not match the trailing dims of input [2,3]"),
      std::string::npos)
      << e;
  e = error_of([&] { call("layer_norm", {T(x), L({I(3)}), T(iota({4}))}); });
  EXPECT_NE(e.find("[layer_norm] weight [4] does not match normalized_shape [3]"),
            std::string::npos)
      << e;
  e = error_of([&] { call("layer_norm", {T(iota({2, 3}, DType::kInt64)), L({I(3)})}); });
  EXPECT_NE(e.find("[layer_norm]"), std::string::npos) << e;
  e = error_of([&] { call("rms_norm", {T(x), L({I(2), I(3), I(1)})}); });
  EXPECT_NE(e.find("[rms_norm]"), std::string::npos) << e;
}

TEST(RmsNorm, MatchesReference) {
  std::mt19937 g(44);
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kFloat16}) {
    const double tol = dt == DType::kFloat32 ? 1e-6 : dt == DType::kFloat64 ? 1e-12 : 2e-3;
    Tensor x = random_tensor({4, 8}, dt, g).slice(0, 0, 4, 2);  // [2,8], row step
    Tensor w = random_tensor({8}, dt, g);
    NormRef r = ref_norm(x, 8, w, Tensor(), 1e-6, true);
    Tensor got = call_t("torch.nn.functional.rms_norm", {T(x), Tup({I(8)})},
                        {{"weight", T(w)}, {"eps", F(1e-6)}});
    EXPECT_EQ(got.dtype(), dt);
    EXPECT_TRUE(tensor_near(got, {2, 8}, r.out, tol)) << dtype_name(dt);
  }
  // eps=None: the compute dtype's epsilon (float's for float32 and half types).
  Tensor tiny = dt({1e-9, -2e-9, 3e-9}, {3});
  NormRef rd = ref_norm(tiny, 3, Tensor(), Tensor(), std::numeric_limits<double>::epsilon(), true);
  EXPECT_TRUE(tensor_near(call_t("rms_norm", {T(tiny), L({I(3)})}), {3}, rd.out, 1e-12));
  Tensor tf = tiny.to(DType::kFloat32);
  NormRef rf = ref_norm(tf, 3, Tensor(), Tensor(), std::numeric_limits<float>::epsilon(), true);
  EXPECT_TRUE(
      tensor_near(call_t("rms_norm", {T(tf), L({I(3)})}, {{"eps", None()}}), {3}, rf.out, 1e-6));
}

TEST(RmsNorm, FusedFormReturnsRstd) {
  std::mt19937 g(45);
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kBFloat16}) {
    Tensor x = random_tensor({2, 3, 4}, dt, g), w = random_tensor({3, 4}, dt, g);
    NormRef r = ref_norm(x, 12, w, Tensor(), 1e-5, true);
    Value res = call("aten._fused_rms_norm.default", {T(x), L({I(3), I(4)}), T(w), F(1e-5)});
    ASSERT_EQ(res.items.size(), 2u);
    const double tol = dt == DType::kFloat32 ? 1e-6 : dt == DType::kFloat64 ? 1e-12 : 1.6e-2;
    EXPECT_TRUE(tensor_near(res.items[0].tensor, {2, 3, 4}, r.out, tol)) << dtype_name(dt);
    EXPECT_EQ(res.items[1].tensor.dtype(),
              dt == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32);
    EXPECT_TRUE(
        tensor_near(res.items[1].tensor, {2, 1, 1}, r.rstd, dt == DType::kFloat64 ? 1e-12 : 1e-6));
  }
}

TEST(Dropout, EvalIsIdentityAndTrainingErrors) {
  Tensor x = iota({2, 3}).t();
  for (const auto& [target, kwargs] :
       std::vector<std::pair<std::string, std::vector<std::pair<std::string, Value>>>>{
           {"torch.nn.functional.dropout",
            {{"p", F(0.1)}, {"training", B(false)}, {"inplace", B(false)}}},
           {"aten.dropout.default", {{"p", F(0.3)}, {"train", B(false)}}},
           {"torch.nn.functional.dropout2d", {{"training", B(false)}}},
       }) {
    Tensor y = call_t(target, {T(x)}, kwargs);
    EXPECT_TRUE(tensor_equal(y, x)) << target;
    EXPECT_FALSE(y.same_storage(x)) << target << " returns a fresh tensor";
  }
  // F.dropout defaults to training=True.
  std::string e = error_of([&] { call("torch.nn.functional.dropout", {T(x)}); });
  EXPECT_NE(e.find("[dropout] training=True is not supported: inplace runs inference only"),
            std::string::npos)
      << e;
  e = error_of([&] { call("dropout", {T(x), F(0.5), B(true)}); });
  EXPECT_NE(e.find("inference only"), std::string::npos) << e;
  e = error_of([&] { call("dropout", {T(x), F(1.5), B(false)}); });
  EXPECT_NE(e.find("[dropout] dropout probability has to be between 0 and 1"), std::string::npos)
      << e;
  // In place: values unchanged, self returned.
  Tensor z = iota({4});
  Value r = call("aten.dropout_.default", {T(z), F(0.2), B(false)});
  EXPECT_TRUE(r.tensor.same_view(z));
  EXPECT_TRUE(tensor_near(z, {4}, {0, 1, 2, 3}));
  Value nd = call("aten.native_dropout.default", {T(x), F(0.5), B(false)});
  EXPECT_TRUE(tensor_equal(nd.items[0].tensor, x));
  EXPECT_EQ(nd.items[1].tensor.dtype(), DType::kBool);
  EXPECT_TRUE(tensor_near(nd.items[1].tensor, {3, 2}, {1, 1, 1, 1, 1, 1}));
  EXPECT_THROW(call("native_dropout", {T(x), F(0.5), None()}), Error);
}

}  // namespace
}  // namespace inplace::testing
