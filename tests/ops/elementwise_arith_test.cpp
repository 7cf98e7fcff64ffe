#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/elementwise_test_util.h"

namespace inplace::testing {
namespace {

TEST(ElementwiseArith, AddHandWorked) {
  Tensor a = ft({1, 2, 3}, {3}), b = ft({10, 20, 30}, {3});
  EXPECT_TRUE(tensor_near(call_t("torch.add", {T(a), T(b)}), {3}, {11, 22, 33}));
  EXPECT_TRUE(tensor_near(call_t("torch.add", {T(a), T(b)}, {{"alpha", I(2)}}), {3}, {21, 42, 63}));
  EXPECT_TRUE(tensor_near(call_t("aten.sub.Tensor", {T(a), T(b)}, {{"alpha", F(0.5)}}), {3},
                          {-4, -8, -12}));
  EXPECT_TRUE(tensor_near(call_t("_operator.mul", {T(a), F(-1.5)}), {3}, {-1.5, -3, -4.5}));
  EXPECT_TRUE(tensor_near(call_t("_operator.truediv", {T(b), T(a)}), {3}, {10, 10, 10}));
}

TEST(ElementwiseArith, BroadcastBothWaysAgainstReference) {
  // [2,1] op [3] -> [2,3] and [3] op [2,1] -> [2,3]
  Tensor col = sample({2, 1}, DType::kFloat32, 1), row = sample_nonzero({3}, DType::kFloat32, 2);
  struct Case {
    const char* target;
    double (*ref)(double, double);
  };
  const Case cases[] = {
      {"add", [](double x, double y) { return x + y; }},
      {"sub", [](double x, double y) { return x - y; }},
      {"mul", [](double x, double y) { return x * y; }},
      {"div", [](double x, double y) { return x / y; }},
      {"maximum", [](double x, double y) { return std::max(x, y); }},
      {"minimum", [](double x, double y) { return std::min(x, y); }},
  };
  for (const Case& c : cases) {
    Tensor r1 = call_t(c.target, {T(col), T(row)});
    EXPECT_TRUE(tensor_near(r1, {2, 3}, ref_binary(col, row, {2, 3}, c.ref))) << c.target;
    Tensor r2 = call_t(c.target, {T(row), T(col)});
    EXPECT_TRUE(tensor_near(r2, {2, 3}, ref_binary(row, col, {2, 3}, c.ref))) << c.target;
  }
  // [4,1,3] op [2,1]: both sides expand
  Tensor a = sample({4, 1, 3}, DType::kFloat64, 3), b = sample({2, 1}, DType::kFloat64, 4);
  EXPECT_TRUE(tensor_near(call_t("mul", {T(a), T(b)}), {4, 2, 3},
                          ref_binary(a, b, {4, 2, 3}, [](double x, double y) { return x * y; })));
}

TEST(ElementwiseArith, NonContiguousInputs) {
  Tensor base = sample({4, 6}, DType::kFloat32, 5);
  Tensor at = base.t();                                              // [6,4], strides (1,6)
  Tensor bs = sample({6, 8}, DType::kFloat32, 6).slice(1, 0, 8, 2);  // [6,4] step 2
  ASSERT_FALSE(at.is_contiguous());
  ASSERT_FALSE(bs.is_contiguous());
  Tensor r = call_t("add", {T(at), T(bs)}, {{"alpha", I(3)}});
  EXPECT_TRUE(r.is_contiguous());
  EXPECT_TRUE(tensor_near(
      r, {6, 4}, ref_binary(at, bs, {6, 4}, [](double x, double y) { return x + 3 * y; })));
  // a strided row broadcast against a transposed matrix
  Tensor row = sample({8}, DType::kFloat32, 7).slice(0, 1, 8, 2);  // [4] step 2
  EXPECT_TRUE(tensor_near(call_t("mul", {T(at), T(row)}), {6, 4},
                          ref_binary(at, row, {6, 4}, [](double x, double y) { return x * y; })));
  // a negative-dim slice view: last column
  Tensor lastcol = base.slice(-1, 5, 6);
  EXPECT_TRUE(tensor_near(call_t("sub", {T(lastcol), F(1.0)}), {4, 1},
                          ref_unary(lastcol, [](double x) { return x - 1; })));
}

TEST(ElementwiseArith, EveryDTypeAddSubMul) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(dtype_name(t));
    Tensor a = sample({3, 4}, t, 11), b = sample({4}, t, 12);
    Tensor s = call_t("add", {T(a), T(b)});
    ASSERT_EQ(s.dtype(), t);
    Tensor m = call_t("mul", {T(a), T(b)});
    ASSERT_EQ(m.dtype(), t);
    if (t == DType::kBool) {
      EXPECT_TRUE(tensor_near(s, {3, 4}, ref_binary(a, b, {3, 4}, [](double x, double y) {
                                return double(x != 0 || y != 0);
                              })));
      EXPECT_TRUE(tensor_near(m, {3, 4}, ref_binary(a, b, {3, 4}, [](double x, double y) {
                                return double(x != 0 && y != 0);
                              })));
      continue;
    }
    // floats round to t; integers wrap to t's range (uint8: 16 * 16 = 0)
    auto round_t = [t](double v) {
      return is_floating(t) ? rounded(v, t)
                            : Tensor::full({}, Scalar(static_cast<int64_t>(v)), t).at(0);
    };
    EXPECT_TRUE(tensor_near(
        s, {3, 4}, ref_binary(a, b, {3, 4}, [&](double x, double y) { return round_t(x + y); })));
    EXPECT_TRUE(tensor_near(
        m, {3, 4}, ref_binary(a, b, {3, 4}, [&](double x, double y) { return round_t(x * y); })));
    Tensor d = call_t("sub", {T(a), T(b)});
    EXPECT_TRUE(tensor_near(
        d, {3, 4}, ref_binary(a, b, {3, 4}, [&](double x, double y) { return round_t(x - y); })));
  }
}

TEST(ElementwiseArith, HalfTypesComputeInFloat) {
  // torch multiplies half by a Python float kept in float (not rounded to half first):
  // 3 * 0.1f rounds to 0.300048828125 in half; with half(0.1) it would be 0.2998046875.
  Tensor h = make({3.0, 0.75}, {2}, DType::kFloat16);
  Tensor r = call_t("mul", {T(h), F(0.1)});
  ASSERT_EQ(r.dtype(), DType::kFloat16);
  EXPECT_EQ(r.at(0), 0.300048828125);
  EXPECT_EQ(r.at(1), 0.07501220703125);
  Tensor bf = make({1.5, -2.25, 100}, {3}, DType::kBFloat16);
  Tensor s = call_t("add", {T(bf), T(bf)}, {{"alpha", I(2)}});
  EXPECT_TRUE(tensor_near(s, {3}, {4.5, -6.75, 300}));
  EXPECT_EQ(s.dtype(), DType::kBFloat16);
}

TEST(ElementwiseArith, PromotionWithScalarsAndZeroDim) {
  Tensor i64 = lt({1, 2}, {2});
  Tensor r = call_t("add", {T(i64), F(2.5)});
  EXPECT_EQ(r.dtype(), DType::kFloat32);
  EXPECT_TRUE(tensor_near(r, {2}, {3.5, 4.5}));

  Tensor i32 = make({1, 2}, {2}, DType::kInt32);
  Tensor zero_dim_long = Tensor::scalar(Scalar(int64_t{5}), DType::kInt64);
  r = call_t("add", {T(i32), T(zero_dim_long)});
  EXPECT_EQ(r.dtype(), DType::kInt32);
  EXPECT_TRUE(tensor_near(r, {2}, {6, 7}));

  Tensor u8 = make({200, 3}, {2}, DType::kUInt8), i8 = make({-1, -100}, {2}, DType::kInt8);
  r = call_t("add", {T(u8), T(i8)});
  EXPECT_EQ(r.dtype(), DType::kInt16);
  EXPECT_TRUE(tensor_near(r, {2}, {199, -97}));

  Tensor f16 = make({1, 2}, {2}, DType::kFloat16);
  EXPECT_EQ(call_t("add", {T(f16), T(Tensor::scalar(Scalar(1.0), DType::kFloat64))}).dtype(),
            DType::kFloat16);
  EXPECT_EQ(call_t("mul", {T(f16), F(3.0)}).dtype(), DType::kFloat16);
  EXPECT_EQ(call_t("add", {T(i64), T(Tensor::scalar(Scalar(1.0), DType::kFloat16))}).dtype(),
            DType::kFloat16);
  EXPECT_EQ(call_t("add", {T(f16), T(make({1, 1}, {2}, DType::kFloat32))}).dtype(),
            DType::kFloat32);
  EXPECT_EQ(call_t("add", {T(f16), T(make({1, 1}, {2}, DType::kBFloat16))}).dtype(),
            DType::kFloat32);
  EXPECT_EQ(call_t("add", {T(i32), T(lt({1, 1}, {2}))}).dtype(), DType::kInt64);

  Tensor bools = bt({true, false}, {2});
  r = call_t("add", {T(bools), I(1)});
  EXPECT_EQ(r.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(r, {2}, {2, 1}));
  r = call_t("mul", {T(bools), B(true)});
  EXPECT_EQ(r.dtype(), DType::kBool);
  EXPECT_TRUE(tensor_near(r, {2}, {1, 0}));
  // 0-dim with 0-dim stays 0-dim; a Python int into uint8 keeps uint8 (and wraps)
  r = call_t("add", {T(Tensor::scalar(Scalar(2), DType::kInt64)), F(0.5)});
  EXPECT_EQ(r.shape(), Shape{});
  EXPECT_EQ(r.dtype(), DType::kFloat32);
  EXPECT_EQ(r.at(0), 2.5);
  r = call_t("add", {T(u8), I(100)});
  EXPECT_EQ(r.dtype(), DType::kUInt8);
  EXPECT_TRUE(tensor_near(r, {2}, {44, 103}));
}

TEST(ElementwiseArith, ZeroDimFloat64KeepsFullPrecision) {
  Tensor x = dt({1, 2}, {2});
  Tensor tiny = Tensor::scalar(Scalar(1e-10), DType::kFloat64);
  Tensor r = call_t("add", {T(x), T(tiny)});
  EXPECT_EQ(r.at(0), 1 + 1e-10);
  EXPECT_EQ(r.at(1), 2 + 1e-10);
  r = call_t("fill", {T(x), T(Tensor::scalar(Scalar(0.1), DType::kFloat64))});
  EXPECT_EQ(r.at(0), 0.1);
}

TEST(ElementwiseArith, IntegerOverflowWraps) {
  Tensor i8 = make({100, -100}, {2}, DType::kInt8);
  EXPECT_TRUE(tensor_near(call_t("add", {T(i8), T(i8)}), {2}, {-56, 56}));
  Tensor big = lt({std::numeric_limits<int64_t>::max()}, {1});
  EXPECT_EQ(call_t("add", {T(big), I(1)}).item().to_int(), std::numeric_limits<int64_t>::min());
  // INT64_MIN / -1 traps in hardware; torch wraps.
  Tensor mn = lt({std::numeric_limits<int64_t>::min()}, {1});
  EXPECT_EQ(call_t("div", {T(mn), I(-1)}, {{"rounding_mode", S("floor")}}).item().to_int(),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(call_t("remainder", {T(mn), I(-1)}).item().to_int(), 0);
}

TEST(ElementwiseArith, TrueDivisionOfIntegersIsFloat) {
  Tensor a = lt({7, -7, 0}, {3}), b = lt({2, 2, 5}, {3});
  Tensor r = call_t("div", {T(a), T(b)});
  EXPECT_EQ(r.dtype(), DType::kFloat32);
  EXPECT_TRUE(tensor_near(r, {3}, {3.5, -3.5, 0}));
  Tensor z = call_t("div", {T(a), I(0)});  // float division by zero is inf / nan, no error
  EXPECT_TRUE(std::isinf(z.at(0)) && z.at(0) > 0);
  EXPECT_TRUE(std::isinf(z.at(1)) && z.at(1) < 0);
  EXPECT_TRUE(std::isnan(z.at(2)));
  EXPECT_EQ(call_t("div", {T(bt({true}, {1})), T(bt({true}, {1}))}).dtype(), DType::kFloat32);
}

TEST(ElementwiseArith, RoundingModesAndRemainder) {
  Tensor a = lt({7, -7, 7, -7, 0}, {5}), b = lt({2, 2, -2, -2, 3}, {5});
  Tensor trunc = call_t("div", {T(a), T(b)}, {{"rounding_mode", S("trunc")}});
  EXPECT_EQ(trunc.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(trunc, {5}, {3, -3, -3, 3, 0}));
  Tensor floor = call_t("aten.div.Tensor_mode", {T(a), T(b)}, {{"rounding_mode", S("floor")}});
  EXPECT_TRUE(tensor_near(floor, {5}, {3, -4, -4, 3, 0}));
  EXPECT_TRUE(tensor_near(call_t("_operator.floordiv", {T(a), T(b)}), {5}, {3, -4, -4, 3, 0}));
  EXPECT_TRUE(tensor_near(call_t("_operator.mod", {T(a), T(b)}), {5}, {1, 1, -1, -1, 0}));
  EXPECT_TRUE(tensor_near(call_t("fmod", {T(a), T(b)}), {5}, {1, -1, 1, -1, 0}));

  Tensor fa = ft({7.5f, -7.5f, 7.5f, -7.5f}, {4}), fb = ft({2, 2, -2, -2}, {4});
  EXPECT_TRUE(tensor_near(call_t("div", {T(fa), T(fb)}, {{"rounding_mode", S("trunc")}}), {4},
                          {3, -3, -3, 3}));
  EXPECT_TRUE(tensor_near(call_t("floor_divide", {T(fa), T(fb)}), {4}, {3, -4, -4, 3}));
  EXPECT_TRUE(tensor_near(call_t("remainder", {T(fa), T(fb)}), {4}, {1.5, 0.5, -0.5, -1.5}));
  EXPECT_TRUE(tensor_near(call_t("fmod", {T(fa), T(fb)}), {4}, {1.5, -1.5, 1.5, -1.5}));
  // reference loop over mixed signs and a broadcast divisor, float64
  Tensor x = sample({5, 3}, DType::kFloat64, 21), y = sample_nonzero({3}, DType::kFloat64, 22);
  EXPECT_TRUE(
      tensor_near(call_t("floor_divide", {T(x), T(y)}), {5, 3},
                  ref_binary(x, y, {5, 3}, [](double p, double q) { return std::floor(p / q); })));
  EXPECT_TRUE(tensor_near(
      call_t("remainder", {T(x), T(y)}), {5, 3},
      ref_binary(x, y, {5, 3}, [](double p, double q) { return p - std::floor(p / q) * q; })));
  // Scalar % Tensor
  EXPECT_TRUE(
      tensor_near(call_t("aten.remainder.Scalar_Tensor", {I(7), T(b)}), {5}, {1, 1, -1, -1, 1}));
}

TEST(ElementwiseArith, IntegerDivisionByZeroErrors) {
  Tensor a = lt({1, 2}, {2}), b = lt({1, 0}, {2});
  std::string msg = error_of([&] { call("div", {T(a), T(b)}, {{"rounding_mode", S("trunc")}}); });
  EXPECT_TRUE(contains(msg, "[div]") && contains(msg, "ZeroDivisionError")) << msg;
  msg = error_of([&] { call("remainder", {T(a), I(0)}); });
  EXPECT_TRUE(contains(msg, "[remainder]") && contains(msg, "ZeroDivisionError")) << msg;
  msg = error_of([&] { call("floor_divide", {T(a), T(b)}); });
  EXPECT_TRUE(contains(msg, "[floor_divide]")) << msg;
  msg = error_of([&] { call("div", {T(a), T(b)}, {{"rounding_mode", S("round")}}); });
  EXPECT_TRUE(contains(msg, "rounding_mode") && contains(msg, "round")) << msg;
}

TEST(ElementwiseArith, Pow) {
  Tensor x = ft({4, 9, 0.25f, -2}, {4});
  EXPECT_TRUE(tensor_near(call_t("pow", {T(x), I(2)}), {4}, {16, 81, 0.0625, 4}));
  EXPECT_TRUE(tensor_near(call_t("pow", {T(x), F(3.0)}), {4}, {64, 729, 0.015625, -8}));
  Tensor sq = call_t("pow", {T(x), F(0.5)});
  EXPECT_TRUE(tensor_near(sq.slice(0, 0, 3), {3}, {2, 3, 0.5}));
  EXPECT_TRUE(std::isnan(sq.at(3)));
  EXPECT_TRUE(tensor_near(call_t("pow", {T(x), F(-1.0)}), {4}, {0.25, 1.0 / 9, 4, -0.5}));
  EXPECT_TRUE(tensor_near(call_t("pow", {T(x), I(0)}), {4}, {1, 1, 1, 1}));
  EXPECT_TRUE(tensor_near(call_t("pow", {T(x), F(1.5)}).slice(0, 0, 3), {3}, {8, 27, 0.125}));
  // Tensor ** Tensor with broadcasting, float64 reference
  Tensor base = sample_nonzero({3, 2}, DType::kFloat64, 31).slice(0, 0, 3);
  Tensor e = ft({2, -1.5f}, {2});
  EXPECT_TRUE(
      tensor_near(call_t("pow", {T(base), T(e)}), {3, 2},
                  ref_binary(base, e, {3, 2}, [](double p, double q) { return std::pow(p, q); })));
  // integers: powi, negative exponents by the base +-1 rule
  Tensor ib = lt({2, -3, 1, -1, 5}, {5});
  Tensor r = call_t("pow", {T(ib), I(3)});
  EXPECT_EQ(r.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(r, {5}, {8, -27, 1, -1, 125}));
  EXPECT_TRUE(
      tensor_near(call_t("pow", {T(ib), T(lt({-1, -1, -2, -3, -1}, {5}))}), {5}, {0, 0, 1, -1, 0}));
  std::string msg = error_of([&] { call("pow", {T(ib), I(-2)}); });
  EXPECT_TRUE(contains(msg, "[pow]") && contains(msg, "negative integer powers")) << msg;
  // int tensor ** float -> float32; Scalar ** Tensor
  EXPECT_EQ(call_t("pow", {T(ib), F(2.0)}).dtype(), DType::kFloat32);
  r = call_t("aten.pow.Scalar", {I(2), T(lt({0, 3, 10}, {3}))});
  EXPECT_EQ(r.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(r, {3}, {1, 8, 1024}));
  r = call_t("pow", {F(2.0), T(lt({0, 3, -1}, {3}))});
  EXPECT_EQ(r.dtype(), DType::kFloat32);
  EXPECT_TRUE(tensor_near(r, {3}, {1, 8, 0.5}));
  EXPECT_TRUE(tensor_near(call_t("__rpow__", {T(lt({1, 2}, {2})), I(3)}), {2}, {3, 9}));
  EXPECT_TRUE(tensor_near(call_t("_operator.pow", {T(x), I(2)}), {4}, {16, 81, 0.0625, 4}));
  // half: computed in float
  Tensor h = make({1.5, -3}, {2}, DType::kFloat16);
  EXPECT_TRUE(tensor_near(call_t("pow", {T(h), I(2)}), {2}, {2.25, 9}));
  r = call_t("square", {T(bt({true, false}, {2}))});
  EXPECT_EQ(r.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(r, {2}, {1, 0}));
}

TEST(ElementwiseArith, BoolRulesMatchTorch) {
  Tensor b = bt({true, false}, {2});
  std::string msg = error_of([&] { call("_operator.neg", {T(b)}); });
  EXPECT_TRUE(contains(msg, "[neg]") && contains(msg, "bool")) << msg;
  msg = error_of([&] { call("_operator.sub", {T(b), T(b)}); });
  EXPECT_TRUE(contains(msg, "[sub]") && contains(msg, "two bool tensors")) << msg;
  msg = error_of([&] { call("sub", {T(ft({1, 2}, {2})), B(true)}); });
  EXPECT_TRUE(contains(msg, "[sub]") && contains(msg, "with a bool tensor")) << msg;
  msg = error_of([&] { call("rsub", {T(b), I(1)}); });
  EXPECT_TRUE(contains(msg, "[rsub]")) << msg;
  EXPECT_TRUE(contains(error_of([&] { call("pow", {T(b), T(b)}); }), "[pow]"));
  EXPECT_TRUE(contains(error_of([&] { call("floor_divide", {T(b), T(b)}); }), "[floor_divide]"));
  // alpha rules
  msg = error_of([&] { call("add", {T(lt({1}, {1})), T(lt({1}, {1}))}, {{"alpha", F(0.5)}}); });
  EXPECT_TRUE(contains(msg, "[add]") && contains(msg, "alpha")) << msg;
  msg = error_of([&] { call("add", {T(ft({1}, {1})), T(ft({1}, {1}))}, {{"alpha", B(true)}}); });
  EXPECT_TRUE(contains(msg, "[add]") && contains(msg, "alpha")) << msg;
  EXPECT_TRUE(tensor_near(call_t("add", {T(b), T(b)}, {{"alpha", B(false)}}), {2}, {1, 0}));
}

TEST(ElementwiseArith, MaximumMinimumPropagateNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor a = dt({1, nan, 3, -0.5}, {4}), b = dt({2, 0, nan, -1}, {4});
  Tensor mx = call_t("maximum", {T(a), T(b)}), mn = call_t("minimum", {T(a), T(b)});
  EXPECT_TRUE(tensor_near(mx, {4}, {2, nan, nan, -0.5}));
  EXPECT_TRUE(tensor_near(mn, {4}, {1, nan, nan, -1}));
  EXPECT_TRUE(tensor_near(
      call_t("maximum", {T(lt({1, 5}, {2})), T(make({3, 3}, {2}, DType::kInt32))}), {2}, {3, 5}));
}

TEST(ElementwiseArith, Bitwise) {
  Tensor a = lt({12, -1, 5}, {3}), b = lt({10, 7, 0}, {3});
  EXPECT_TRUE(tensor_near(call_t("_operator.and_", {T(a), T(b)}), {3}, {8, 7, 0}));
  EXPECT_TRUE(tensor_near(call_t("_operator.or_", {T(a), T(b)}), {3}, {14, -1, 5}));
  EXPECT_TRUE(tensor_near(call_t("_operator.xor", {T(a), T(b)}), {3}, {6, -8, 5}));
  EXPECT_TRUE(tensor_near(call_t("_operator.invert", {T(a)}), {3}, {-13, 0, -6}));
  Tensor p = bt({true, true, false}, {3}), q = bt({true, false, false}, {3});
  Tensor r = call_t("__and__", {T(p), T(q)});
  EXPECT_EQ(r.dtype(), DType::kBool);
  EXPECT_TRUE(tensor_near(r, {3}, {1, 0, 0}));
  EXPECT_TRUE(tensor_near(call_t("__or__", {T(p), T(q)}), {3}, {1, 1, 0}));
  EXPECT_TRUE(tensor_near(call_t("__xor__", {T(p), T(q)}), {3}, {0, 1, 0}));
  EXPECT_TRUE(tensor_near(call_t("__invert__", {T(p)}), {3}, {0, 0, 1}));
  std::string msg = error_of([&] { call("bitwise_and", {T(ft({1}, {1})), T(a)}); });
  EXPECT_TRUE(contains(msg, "[bitwise_and]") && contains(msg, "float32")) << msg;
}

TEST(ElementwiseArith, ReversedAndDunderSpellings) {
  Tensor x = ft({1, 2, 4}, {3});
  EXPECT_TRUE(tensor_near(call_t("__radd__", {T(x), I(1)}), {3}, {2, 3, 5}));
  EXPECT_TRUE(tensor_near(call_t("__rsub__", {T(x), I(10)}), {3}, {9, 8, 6}));
  EXPECT_TRUE(tensor_near(call_t("__rmul__", {T(x), I(3)}), {3}, {3, 6, 12}));
  EXPECT_TRUE(tensor_near(call_t("__rtruediv__", {T(x), I(8)}), {3}, {8, 4, 2}));
  EXPECT_TRUE(tensor_near(call_t("__rdiv__", {T(x), I(8)}), {3}, {8, 4, 2}));
  EXPECT_TRUE(tensor_near(call_t("__rfloordiv__", {T(x), I(7)}), {3}, {7, 3, 1}));
  EXPECT_TRUE(tensor_near(call_t("__rmod__", {T(x), I(7)}), {3}, {0, 1, 3}));
  // operator.sub(2, x): a Python number on the left
  EXPECT_TRUE(tensor_near(call_t("_operator.sub", {I(2), T(x)}), {3}, {1, 0, -2}));
  EXPECT_TRUE(tensor_near(call_t("torch.ops.aten.rsub.Scalar", {T(x), I(1)}), {3}, {0, -1, -3}));
  EXPECT_TRUE(tensor_near(call_t("torch.true_divide", {T(x), I(2)}), {3}, {0.5, 1, 2}));
  EXPECT_TRUE(tensor_near(call_t("aten.mul.Scalar", {T(x), F(0.5)}), {3}, {0.5, 1, 2}));
}

TEST(ElementwiseArith, EmptyAndZeroDim) {
  Tensor e = Tensor::empty({0, 3}, DType::kFloat32);
  Tensor r = call_t("add", {T(e), T(ft({1, 2, 3}, {3}))});
  EXPECT_EQ(r.shape(), (Shape{0, 3}));
  r = call_t("div", {T(Tensor::empty({2, 0}, DType::kInt64)), I(0)},
             {{"rounding_mode", S("floor")}});
  EXPECT_EQ(r.shape(), (Shape{2, 0}));
  Tensor s0 = Tensor::scalar(Scalar(3.0), DType::kFloat32);
  r = call_t("mul", {T(s0), T(ft({1, 2}, {2}))});
  EXPECT_TRUE(tensor_near(r, {2}, {3, 6}));
  r = call_t("mul", {T(s0), T(s0)});
  EXPECT_EQ(r.shape(), Shape{});
  EXPECT_EQ(r.at(0), 9);
  // [1] with [1,1]: one element broadcast
  r = call_t("sub", {T(ft({5}, {1})), T(ft({2}, {1, 1}))});
  EXPECT_TRUE(tensor_near(r, {1, 1}, {3}));
}

TEST(ElementwiseArith, ShapeErrorsNameOpAndBothShapes) {
  Tensor a = sample({2, 3}, DType::kFloat32), b = sample({4}, DType::kFloat32);
  for (const char* op : {"add", "mul", "div", "pow", "maximum", "remainder"}) {
    std::string msg = error_of([&] { call(op, {T(a), T(b)}); });
    EXPECT_TRUE(contains(msg, std::string("[") + op + "]")) << msg;
    EXPECT_TRUE(contains(msg, "[2,3]") && contains(msg, "[4]")) << msg;
  }
}

TEST(ElementwiseArith, InPlaceWritesCallersStorage) {
  Tensor x = ft({1, 2, 3, 4, 5, 6}, {2, 3});
  void* before = x.data_ptr();
  Value r = call("add_", {T(x), T(ft({10, 20, 30}, {3}))}, {{"alpha", I(2)}});
  EXPECT_TRUE(r.tensor.same_view(x));
  EXPECT_EQ(x.data_ptr(), before);
  EXPECT_TRUE(tensor_near(x, {2, 3}, {21, 42, 63, 24, 45, 66}));
  call("_operator.imul", {T(x), I(2)});
  EXPECT_TRUE(tensor_near(x, {2, 3}, {42, 84, 126, 48, 90, 132}));
  call("__isub__", {T(x), F(2.0)});
  call("aten.div_.Tensor", {T(x), T(ft({2}, {1}))});
  EXPECT_TRUE(tensor_near(x, {2, 3}, {20, 41, 62, 23, 44, 65}));
  // a non-contiguous view of x is modified in x's storage
  Tensor col = x.slice(1, 1, 2);
  call("add_", {T(col), I(1000)});
  EXPECT_TRUE(tensor_near(x, {2, 3}, {20, 1041, 62, 23, 1044, 65}));
  Tensor xt = x.t();
  call("mul_", {T(xt), T(ft({1, 0}, {2}))});
  EXPECT_TRUE(tensor_near(x, {2, 3}, {20, 1041, 62, 0, 0, 0}));
  // int tensor keeps its dtype under in-place ops that stay integral
  Tensor i = make({7, -7}, {2}, DType::kInt32);
  call("floor_divide_", {T(i), I(2)});
  EXPECT_EQ(i.dtype(), DType::kInt32);
  EXPECT_TRUE(tensor_near(i, {2}, {3, -4}));
  call("pow_", {T(i), I(2)});
  EXPECT_TRUE(tensor_near(i, {2}, {9, 16}));
  call("add_", {T(i), T(lt({1, 1}, {2}))});  // int64 other: computed in int64, written as int32
  EXPECT_TRUE(tensor_near(i, {2}, {10, 17}));
}

TEST(ElementwiseArith, InPlaceCastAndShapeErrors) {
  Tensor i = lt({1, 2, 3}, {3});
  std::string msg = error_of([&] { call("add_", {T(i), T(ft({1, 1, 1}, {3}))}); });
  EXPECT_TRUE(contains(msg, "add_") && contains(msg,
                                                "result type float32 can't be cast to the "
                                                "desired output type int64"))
      << msg;
  EXPECT_TRUE(tensor_near(i, {3}, {1, 2, 3}));  // untouched after the error
  msg = error_of([&] { call("div_", {T(i), I(2)}); });
  EXPECT_TRUE(contains(msg, "can't be cast")) << msg;
  msg = error_of([&] { call("add_", {T(bt({true}, {1})), I(1)}); });
  EXPECT_TRUE(contains(msg, "int64") && contains(msg, "bool")) << msg;
  Tensor small = ft({1, 2, 3}, {3});
  msg = error_of([&] { call("add_", {T(small), T(ft({1, 2, 3, 4, 5, 6}, {2, 3}))}); });
  EXPECT_TRUE(contains(msg, "add_") && contains(msg, "[3]") && contains(msg, "[2,3]")) << msg;
  EXPECT_TRUE(tensor_near(small, {3}, {1, 2, 3}));
}

TEST(ElementwiseArith, OutPathComputesIntoPlannedMemory) {
  // The engine's path: infer on metas, then compute into memory it owns.
  const OpDef* add = Registry::get().find("add.Tensor");
  ASSERT_NE(add, nullptr);
  ASSERT_TRUE(add->infer && KernelTable::get().find(*add, DeviceType::kCpu));
  Args metas = {T(Tensor::meta({2, 3}, DType::kInt32)), T(Tensor::meta({3}, DType::kFloat16)),
                I(1)};
  std::vector<Tensor> m = add->infer(metas);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(m[0].dtype(), DType::kFloat16);
  std::vector<uint16_t> buffer(6, 0xffff);
  Tensor planned = Tensor::borrow(buffer.data(), {2, 3}, DType::kFloat16);
  Tensor a = make({1, 2, 3, 4, 5, 6}, {2, 3}, DType::kInt32);
  Tensor b = make({0.5, -1, 2}, {3}, DType::kFloat16);
  cpu_out(*add, {T(a), T(b), I(1)}, {planned});
  EXPECT_TRUE(tensor_near(planned, {2, 3}, {1.5, 1, 5, 4.5, 4, 8}));
  // computing into the very view of an input (what a reinplacing engine does)
  Tensor x = ft({1, 2, 3}, {3});
  cpu_out(*add, {T(x), T(ft({1, 1, 1}, {3})), I(1)}, {x});
  EXPECT_TRUE(tensor_near(x, {3}, {2, 3, 4}));
}

}  // namespace
}  // namespace inplace::testing
