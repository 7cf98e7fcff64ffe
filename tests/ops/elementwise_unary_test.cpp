#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/elementwise_test_util.h"

namespace inplace::testing {
namespace {

double gelu_ref(double x) {
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}
double gelu_tanh_ref(double x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
double sigmoid_ref(double x) {
  return 1 / (1 + std::exp(-x));
}

struct FloatCase {
  const char* target;
  double (*ref)(double);
  bool positive_domain;
};
const FloatCase kFloatCases[] = {
    {"sqrt", [](double x) { return std::sqrt(x); }, true},
    {"rsqrt", [](double x) { return 1 / std::sqrt(x); }, true},
    {"exp", [](double x) { return std::exp(x); }, false},
    {"log", [](double x) { return std::log(x); }, true},
    {"log2", [](double x) { return std::log2(x); }, true},
    {"log1p", [](double x) { return std::log1p(x); }, true},
    {"expm1", [](double x) { return std::expm1(x); }, false},
    {"sin", [](double x) { return std::sin(x); }, false},
    {"cos", [](double x) { return std::cos(x); }, false},
    {"tan", [](double x) { return std::tan(x); }, false},
    {"tanh", [](double x) { return std::tanh(x); }, false},
    {"erf", [](double x) { return std::erf(x); }, false},
    {"sigmoid", sigmoid_ref, false},
    {"reciprocal", [](double x) { return 1 / x; }, true},
    {"silu", [](double x) { return x * sigmoid_ref(x); }, false},
    {"gelu", gelu_ref, false},
    {"relu", [](double x) { return x < 0 ? 0.0 : x; }, false},
    {"neg", [](double x) { return -x; }, false},
    {"abs", [](double x) { return std::fabs(x); }, false},
    {"floor", [](double x) { return std::floor(x); }, false},
    {"ceil", [](double x) { return std::ceil(x); }, false},
    {"trunc", [](double x) { return std::trunc(x); }, false},
};

// Input values for a case: quarters in [-2, 2], shifted positive where the domain needs it.
Tensor input_for(const FloatCase& c, DType t, const Shape& shape, uint32_t seed) {
  Tensor x = sample(shape, DType::kFloat64, seed);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double& v = x.data<double>()[i];
    if (c.positive_domain) v = std::fabs(v) + 0.25;
  }
  return x.to(t);
}

TEST(ElementwiseUnary, FloatFunctionsAgainstFloat64Reference) {
  for (DType t : kFloatDTypes) {
    for (const FloatCase& c : kFloatCases) {
      SCOPED_TRACE(std::string(c.target) + " " + dtype_name(t));
      Tensor x = input_for(c, t, {3, 5}, 41);
      Tensor r = call_t(c.target, {T(x)});
      ASSERT_EQ(r.dtype(), t);
      // computed in opmath, then rounded to t once
      std::vector<double> want = ref_unary(x, [&](double v) { return rounded(c.ref(v), t); });
      EXPECT_TRUE(tensor_near(r, {3, 5}, want, t == DType::kFloat64 ? 1e-12 : tol_for(t)));
    }
  }
}

TEST(ElementwiseUnary, NonContiguousInputs) {
  Tensor base = sample({4, 6}, DType::kFloat32, 42);
  for (const Tensor& x : {base.t(), base.slice(1, 0, 6, 3), base.select(1, 2)}) {
    ASSERT_FALSE(x.is_contiguous() && x.dim() > 1);
    EXPECT_TRUE(tensor_near(call_t("exp", {T(x)}), x.shape(),
                            ref_unary(x, [](double v) { return std::exp(v); })));
    EXPECT_TRUE(tensor_near(call_t("gelu", {T(x)}), x.shape(), ref_unary(x, gelu_ref), 1e-6));
  }
}

TEST(ElementwiseUnary, IntegersPromoteToFloat) {
  Tensor i = lt({4, 9, 16}, {3});
  Tensor r = call_t("sqrt", {T(i)});
  EXPECT_EQ(r.dtype(), DType::kFloat32);
  EXPECT_TRUE(tensor_near(r, {3}, {2, 3, 4}));
  r = call_t("torch.sigmoid", {T(bt({true, false}, {2}))});
  EXPECT_EQ(r.dtype(), DType::kFloat32);
  EXPECT_TRUE(tensor_near(r, {2}, {sigmoid_ref(1), 0.5}));
  r = call_t("exp", {T(make({0, 1}, {2}, DType::kUInt8))});
  EXPECT_TRUE(tensor_near(r, {2}, {1, std::exp(1.0)}));
  // rounding ops keep integers as they are
  r = call_t("floor", {T(make({-3, 5}, {2}, DType::kInt16))});
  EXPECT_EQ(r.dtype(), DType::kInt16);
  EXPECT_TRUE(tensor_near(r, {2}, {-3, 5}));
}

TEST(ElementwiseUnary, IntegerNegAbsRelu) {
  const int64_t mn = std::numeric_limits<int64_t>::min();
  Tensor i = lt({-3, 0, 7, mn}, {4});
  EXPECT_TRUE(tensor_near(call_t("neg", {T(i)}), {4}, {3, 0, -7, double(mn)}));
  EXPECT_EQ(call_t("neg", {T(i)}).at(3), double(mn));  // wraps like torch
  EXPECT_TRUE(tensor_near(call_t("abs", {T(i)}), {4}, {3, 0, 7, double(mn)}));
  Tensor r = call_t("relu", {T(i)});
  EXPECT_EQ(r.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(r, {4}, {0, 0, 7, 0}));
  Tensor u = make({0, 1, 255}, {3}, DType::kUInt8);
  EXPECT_TRUE(tensor_near(call_t("neg", {T(u)}), {3}, {0, 255, 1}));
  EXPECT_TRUE(tensor_near(call_t("abs", {T(u)}), {3}, {0, 1, 255}));
  Tensor i8 = make({-128, -5, 5}, {3}, DType::kInt8);
  EXPECT_TRUE(tensor_near(call_t("abs", {T(i8)}), {3}, {-128, 5, 5}));
}

TEST(ElementwiseUnary, NaNAndSpecialValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = dt({nan, -inf, inf, -0.0, -1}, {5});
  EXPECT_TRUE(tensor_near(call_t("relu", {T(x)}), {5}, {nan, 0, inf, 0, 0}));
  EXPECT_TRUE(std::signbit(call_t("relu", {T(x)}).at(3)));  // relu(-0.0) is -0.0 in torch
  EXPECT_TRUE(tensor_near(call_t("sigmoid", {T(x)}), {5}, {nan, 0, 1, 0.5, sigmoid_ref(-1)}));
  EXPECT_TRUE(tensor_near(call_t("sqrt", {T(x)}), {5}, {nan, nan, inf, 0, nan}));
  Tensor rounds = dt({0.5, 1.5, 2.5, -0.5, -2.5, 2.4}, {6});
  EXPECT_TRUE(tensor_near(call_t("round", {T(rounds)}), {6}, {0, 2, 2, 0, -2, 2}));
}

TEST(ElementwiseUnary, GeluApproximations) {
  Tensor x = sample({7}, DType::kFloat64, 43);
  EXPECT_TRUE(tensor_near(call_t("gelu", {T(x)}, {{"approximate", S("none")}}), {7},
                          ref_unary(x, gelu_ref), 1e-12));
  EXPECT_TRUE(tensor_near(call_t("torch.nn.functional.gelu", {T(x)}, {{"approximate", S("tanh")}}),
                          {7}, ref_unary(x, gelu_tanh_ref), 1e-12));
  Tensor xf = x.to(DType::kFloat32);
  EXPECT_TRUE(tensor_near(call_t("aten.gelu.default", {T(xf)}, {{"approximate", S("tanh")}}), {7},
                          ref_unary(xf, gelu_tanh_ref), 1e-6));
  std::string msg = error_of([&] { call("gelu", {T(x)}, {{"approximate", S("fast")}}); });
  EXPECT_TRUE(contains(msg, "[gelu]") && contains(msg, "fast")) << msg;
  msg = error_of([&] { call("gelu", {T(lt({1}, {1}))}); });
  EXPECT_TRUE(contains(msg, "[gelu]") && contains(msg, "int64")) << msg;
  msg = error_of([&] { call("silu", {T(lt({1}, {1}))}); });
  EXPECT_TRUE(contains(msg, "[silu]") && contains(msg, "int64")) << msg;
  Tensor y = xf.clone();
  call("gelu_", {T(y)}, {{"approximate", S("tanh")}});
  EXPECT_TRUE(tensor_near(y, {7}, ref_unary(xf, gelu_tanh_ref), 1e-6));
}

// silu at float32 gives the contiguous kernel's values (silu_f32) on every input layout: a
// gated MLP's gate is a strided half of one product, and the fused step must equal the chain.
TEST(ElementwiseUnary, SiluOfAStridedViewEqualsSiluOfItsCopy) {
  Tensor x = Tensor::empty({64, 256}, DType::kFloat32);
  uint32_t r = 7;
  for (int64_t i = 0; i < x.numel(); ++i) {
    r = r * 1664525u + 1013904223u;
    x.data<float>()[i] = static_cast<float>(r >> 8) / static_cast<float>(1 << 24) * 16.f - 8.f;
  }
  const Tensor half = x.slice(1, 0, 128);
  EXPECT_TRUE(tensor_equal(call_t("silu", {T(half)}), call_t("silu", {T(half.contiguous())})));
  EXPECT_TRUE(tensor_equal(call_t("silu", {T(x.t())}), call_t("silu", {T(x.t().contiguous())})));
}

TEST(ElementwiseUnary, BoolErrors) {
  Tensor b = bt({true}, {1});
  for (const char* op : {"neg", "abs", "relu", "floor"}) {
    std::string msg = error_of([&] { call(op, {T(b)}); });
    EXPECT_TRUE(contains(msg, std::string("[") + op + "]") && contains(msg, "bool")) << msg;
  }
  std::string msg = error_of([&] { call("bitwise_not", {T(ft({1}, {1}))}); });
  EXPECT_TRUE(contains(msg, "[bitwise_not]") && contains(msg, "float32")) << msg;
}

TEST(ElementwiseUnary, LogicalNotAndBitwiseNot) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor f = dt({0, -2, nan}, {3});
  Tensor r = call_t("logical_not", {T(f)});
  EXPECT_EQ(r.dtype(), DType::kBool);
  EXPECT_TRUE(tensor_near(r, {3}, {1, 0, 0}));
  EXPECT_TRUE(
      tensor_near(call_t("bitwise_not", {T(make({0, 255}, {2}, DType::kUInt8))}), {2}, {255, 0}));
  // logical_not_ keeps self's dtype
  Tensor g = dt({0, 3}, {2});
  call("logical_not_", {T(g)});
  EXPECT_EQ(g.dtype(), DType::kFloat64);
  EXPECT_TRUE(tensor_near(g, {2}, {1, 0}));
}

TEST(ElementwiseUnary, EmptyAndZeroDim) {
  Tensor e = Tensor::empty({0, 4}, DType::kFloat32);
  EXPECT_EQ(call_t("exp", {T(e)}).shape(), (Shape{0, 4}));
  EXPECT_EQ(call_t("sqrt", {T(Tensor::empty({0}, DType::kInt64))}).dtype(), DType::kFloat32);
  Tensor s = Tensor::scalar(Scalar(-2.0), DType::kFloat32);
  Tensor r = call_t("abs", {T(s)});
  EXPECT_EQ(r.shape(), Shape{});
  EXPECT_EQ(r.at(0), 2);
}

TEST(ElementwiseUnary, InPlaceForms) {
  Tensor x = ft({1, 4, 9, 16}, {2, 2});
  void* p = x.data_ptr();
  Value r = call("sqrt_", {T(x)});
  EXPECT_TRUE(r.tensor.same_view(x));
  EXPECT_EQ(x.data_ptr(), p);
  EXPECT_TRUE(tensor_near(x, {2, 2}, {1, 2, 3, 4}));
  Tensor xt = x.t();
  call("neg_", {T(xt.select(0, 0))});  // column 0 of x
  EXPECT_TRUE(tensor_near(x, {2, 2}, {-1, 2, -3, 4}));
  call("relu_", {T(x)});
  EXPECT_TRUE(tensor_near(x, {2, 2}, {0, 2, 0, 4}));
  Tensor i = lt({4}, {1});
  std::string msg = error_of([&] { call("sqrt_", {T(i)}); });
  EXPECT_TRUE(contains(msg, "sqrt_") && contains(msg, "can't be cast")) << msg;
  EXPECT_EQ(i.at(0), 4);
}

TEST(ElementwiseUnary, FunctionalSpellingWithInplaceKeyword) {
  Tensor x = ft({-1, 2}, {2});
  Tensor r = call_t("torch.nn.functional.relu", {T(x)}, {{"inplace", B(false)}});
  EXPECT_FALSE(r.same_storage(x));
  EXPECT_TRUE(tensor_near(r, {2}, {0, 2}));
  EXPECT_TRUE(tensor_near(x, {2}, {-1, 2}));
  r = call_t("torch.nn.functional.relu", {T(x)}, {{"inplace", B(true)}});
  EXPECT_TRUE(r.same_view(x));
  EXPECT_TRUE(tensor_near(x, {2}, {0, 2}));
  const OpDef* f = Registry::get().find("relu.nn_functional");
  ASSERT_NE(f, nullptr);
  // the functional spelling computes into planned memory
  EXPECT_TRUE(f->infer && KernelTable::get().find(*f, DeviceType::kCpu));
  Tensor y = ft({1}, {1});
  call("torch.nn.functional.silu", {T(y)}, {{"inplace", B(true)}});
  EXPECT_NEAR(y.at(0), sigmoid_ref(1), 1e-6);
  EXPECT_TRUE(tensor_near(call_t("_operator.neg", {T(y)}), {1}, {-y.at(0)}));
  EXPECT_TRUE(tensor_near(call_t("_operator.abs", {T(ft({-3}, {1}))}), {1}, {3}));
  EXPECT_TRUE(tensor_near(call_t("torch.Tensor.__neg__", {T(ft({-3}, {1}))}), {1}, {3}));
}

}  // namespace
}  // namespace inplace::testing

namespace inplace::testing {
namespace {

// float32 silu takes a vectorised exp (contiguous tensors): within 1e-6 (relative) of the float64
// formula over the whole range, the limits at +-inf and beyond expf's range, NaN through.
TEST(ElementwiseUnary, SiluFloat32VectorPathOverTheWholeRange) {
  std::vector<float> xs;
  for (float v = -120.0f; v <= 120.0f; v += 0.37f) xs.push_back(v);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.5f, -88.5f, 103.0f, -103.0f}) xs.push_back(v);
  const float inf = std::numeric_limits<float>::infinity();
  xs.push_back(inf);
  xs.push_back(-inf);
  xs.push_back(std::numeric_limits<float>::quiet_NaN());
  const int64_t n = static_cast<int64_t>(xs.size());
  Tensor y = call_t("silu", {T(ft(xs, {n}))});
  for (int64_t i = 0; i < n; ++i) {
    const double x = xs[static_cast<size_t>(i)], got = y.at(i);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(got));
    } else if (std::isinf(x)) {
      EXPECT_TRUE(x > 0 ? got == inf : std::isnan(got) || got == 0) << x << " -> " << got;
    } else {
      const double want = x / (1 + std::exp(-x));
      EXPECT_NEAR(got, want, 1e-6 * std::max(1.0, std::fabs(want))) << "silu(" << x << ")";
    }
  }
}

}  // namespace
}  // namespace inplace::testing
