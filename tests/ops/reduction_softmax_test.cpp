// softmax / log_softmax against a float64 reference written here.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/cpu/reduction_exp.h"
#include "test_util.h"

namespace inplace::testing {
namespace {

Tensor random_tensor(const Shape& s, DType dt, std::mt19937& g, double scale = 4) {
  std::normal_distribution<double> u(0, scale);
  Tensor t = Tensor::empty(s, DType::kFloat64);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = u(g);
  return t.to(dt);
}

// Row-by-row float64 softmax along dim (computed straight from the definition).
std::vector<double> ref_softmax(const Tensor& x, int64_t dim, bool log) {
  const int64_t nd = x.dim();
  dim = dim < 0 ? dim + nd : dim;
  const std::vector<double> v = x.to_double_vector();
  std::vector<double> out(v.size());
  Shape st = contiguous_strides(x.shape());
  const int64_t n = x.shape()[dim], s = st[dim];
  for (int64_t i = 0; i < x.numel(); ++i) {
    if ((i / s) % n != 0) continue;  // i starts a row along dim
    double mx = -INFINITY;
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, v[i + j * s]);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += std::exp(v[i + j * s] - mx);
    for (int64_t j = 0; j < n; ++j)
      out[i + j * s] = log ? v[i + j * s] - mx - std::log(sum) : std::exp(v[i + j * s] - mx) / sum;
  }
  return out;
}

TEST(Softmax, MatchesReferenceOverDimsAndLayouts) {
  std::mt19937 g(21);
  Tensor base = random_tensor({4, 6, 5}, DType::kFloat32, g);
  for (const Tensor& x : {base, base.permute({2, 0, 1}), base.slice(1, 0, 6, 2)}) {
    for (int64_t d = -3; d < 3; ++d) {
      for (bool log : {false, true}) {
        Tensor got = call_t(log ? "torch.log_softmax" : "torch.softmax", {T(x), I(d)});
        EXPECT_EQ(got.dtype(), DType::kFloat32);
        EXPECT_TRUE(tensor_near(got, x.shape(), ref_softmax(x, d, log), 1e-6))
            << shape_str(x.shape()) << " dim " << d << " log " << log;
      }
    }
  }
}

TEST(Softmax, DTypesAndDTypeArgument) {
  std::mt19937 g(22);
  for (DType dt : {DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    Tensor x = random_tensor({3, 7}, dt, g);
    const double tol = dt == DType::kFloat64 ? 1e-12 : (dt == DType::kFloat16 ? 2e-3 : 1e-2);
    EXPECT_TRUE(
        tensor_near(call_t("softmax", {T(x), I(-1)}), {3, 7}, ref_softmax(x, -1, false), tol));
    EXPECT_TRUE(tensor_near(call_t("log_softmax", {T(x), I(0)}), {3, 7}, ref_softmax(x, 0, true),
                            dt == DType::kFloat64 ? 1e-12 : 2e-2));
  }
  Tensor x = random_tensor({2, 5}, DType::kFloat32, g);
  Tensor d = call_t("softmax", {T(x), I(1)}, {{"dtype", Value::dtype_value(DType::kFloat64)}});
  EXPECT_EQ(d.dtype(), DType::kFloat64);
  EXPECT_TRUE(tensor_near(d, {2, 5}, ref_softmax(x, 1, false), 1e-12));
  Tensor xi = lt({1, 2, 3}, {3});
  EXPECT_THROW(call("softmax", {T(xi), I(0)}), Error);
  Tensor fi = call_t("softmax", {T(xi), I(0)}, {{"dtype", Value::dtype_value(DType::kFloat32)}});
  EXPECT_TRUE(tensor_near(fi, {3}, ref_softmax(xi.to(DType::kFloat64), 0, false), 1e-6));
}

TEST(Softmax, AtenAndFunctionalSpellings) {
  std::mt19937 g(23);
  Tensor x = random_tensor({2, 3, 4}, DType::kFloat32, g);
  // FX records F.softmax with _stacklevel and dtype keywords.
  Tensor f = call_t("torch.nn.functional.softmax", {T(x)},
                    {{"dim", I(-1)}, {"_stacklevel", I(3)}, {"dtype", None()}});
  EXPECT_TRUE(tensor_near(f, x.shape(), ref_softmax(x, -1, false), 1e-6));
  // dim=None picks dim 0 for 0-, 1- and 3-D inputs (torch's legacy rule).
  Tensor legacy = call_t("torch.nn.functional.log_softmax", {T(x)}, {{"_stacklevel", I(5)}});
  EXPECT_TRUE(tensor_near(legacy, x.shape(), ref_softmax(x, 0, true), 1e-6));
  Tensor a = call_t("aten._softmax.default", {T(x), I(1), B(false)});
  EXPECT_TRUE(tensor_near(a, x.shape(), ref_softmax(x, 1, false), 1e-6));
  Tensor h = x.to(DType::kFloat16);
  Tensor hf = call_t("aten._log_softmax.default", {T(h), I(2), B(true)});
  EXPECT_EQ(hf.dtype(), DType::kFloat32);
  EXPECT_TRUE(tensor_near(hf, x.shape(), ref_softmax(h, 2, true), 1e-6));
  EXPECT_TRUE(tensor_near(call_t("aten.softmax.int", {T(x), I(0)}), x.shape(),
                          ref_softmax(x, 0, false), 1e-6));
}

TEST(Softmax, VectorizedExpIsAccurate) {
  // The float path's exp stays within ~2 ulp of the float64 exp over softmax's range.
  double worst = 0;
  for (int i = 0; i <= 200000; ++i) {
    const float x = -87.0f * static_cast<float>(i) / 200000.0f;
    const double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::fabs(cpu::exp_vectorizable(x) - want) / want);
  }
  EXPECT_LT(worst, 2.5e-7);
  EXPECT_EQ(cpu::exp_vectorizable(-INFINITY), 0.0f);
  EXPECT_EQ(cpu::exp_vectorizable(-100.0f), 0.0f);
  EXPECT_EQ(cpu::exp_vectorizable(0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(cpu::exp_vectorizable(NAN)));
}

TEST(Softmax, LongRows) {
  std::mt19937 g(24);
  Tensor x = random_tensor({3, 1000}, DType::kFloat32, g, 10);
  for (bool log : {false, true})
    EXPECT_TRUE(tensor_near(call_t(log ? "log_softmax" : "softmax", {T(x), I(1)}), {3, 1000},
                            ref_softmax(x, 1, log), 1e-6));
}

TEST(Softmax, LeadingDimsInColumnBlocks) {
  // softmax over a non-last dim of a row-major tensor runs in blocks of 64 adjacent columns.
  std::mt19937 g(25);
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kBFloat16}) {
    const double tol = dt == DType::kFloat32 ? 1e-6 : dt == DType::kFloat64 ? 1e-12 : 1e-2;
    Tensor x = random_tensor({3, 7, 150}, dt, g);
    for (int64_t d : {0, 1})
      for (bool log : {false, true})
        EXPECT_TRUE(tensor_near(call_t(log ? "log_softmax" : "softmax", {T(x), I(d)}), x.shape(),
                                ref_softmax(x, d, log), log ? tol * 2 : tol))
            << dtype_name(dt) << " dim " << d << " log " << log;
  }
  Tensor n = ft({1.f, NAN, -INFINITY, 2.f, 0.f, -INFINITY}, {2, 3});
  Tensor sn = call_t("softmax", {T(n), I(0)});
  EXPECT_NEAR(sn.at(0), 1 / (1 + std::exp(1.0)), 1e-6);
  EXPECT_TRUE(std::isnan(sn.at(1)) && std::isnan(sn.at(4)));
  EXPECT_TRUE(std::isnan(sn.at(2)));  // a column of -inf only: NaN, as torch
}

TEST(Softmax, ExtremeValues) {
  // Large logits must not overflow: the max is subtracted first.
  Tensor x = ft({1000.f, 1001.f, 1002.f, -INFINITY}, {4});
  double e0 = std::exp(-2.0), e1 = std::exp(-1.0), s = e0 + e1 + 1;
  EXPECT_TRUE(tensor_near(call_t("softmax", {T(x), I(0)}), {4}, {e0 / s, e1 / s, 1 / s, 0}, 1e-6));
  Tensor ls = call_t("log_softmax", {T(x), I(0)});
  EXPECT_NEAR(ls.at(2), -std::log(s), 1e-6);
  EXPECT_TRUE(std::isinf(ls.at(3)) && ls.at(3) < 0);
  // A NaN poisons its row only.
  Tensor n = ft({1.f, NAN, 2.f, 0.f}, {2, 2});
  Tensor sn = call_t("softmax", {T(n), I(1)});
  EXPECT_TRUE(std::isnan(sn.at(0)) && std::isnan(sn.at(1)));
  EXPECT_NEAR(sn.at(2), 1 / (1 + std::exp(-2.0)), 1e-6);
  // Empty and 0-d.
  EXPECT_EQ(call_t("softmax", {T(Tensor::empty({0, 3}, DType::kFloat32)), I(1)}).shape(),
            (Shape{0, 3}));
  EXPECT_EQ(call_t("softmax", {T(Tensor::empty({2, 0}, DType::kFloat32)), I(1)}).shape(),
            (Shape{2, 0}));
  EXPECT_TRUE(tensor_near(
      call_t("softmax", {T(Tensor::scalar(Scalar(3.0), DType::kFloat32)), I(0)}), {}, {1}));
  try {
    call("softmax", {T(x), I(1)});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[softmax]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace inplace::testing
