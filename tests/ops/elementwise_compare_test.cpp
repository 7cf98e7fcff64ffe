#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/elementwise_test_util.h"

namespace inplace::testing {
namespace {

struct CmpCase {
  const char* target;
  bool (*ref)(double, double);
};
const CmpCase kCmpCases[] = {
    {"eq", [](double x, double y) { return x == y; }},
    {"ne", [](double x, double y) { return x != y; }},
    {"lt", [](double x, double y) { return x < y; }},
    {"le", [](double x, double y) { return x <= y; }},
    {"gt", [](double x, double y) { return x > y; }},
    {"ge", [](double x, double y) { return x >= y; }},
};

TEST(ElementwiseCompare, HandWorked) {
  Tensor a = ft({1, 2, 3}, {3}), b = ft({3, 2, 1}, {3});
  EXPECT_TRUE(tensor_near(call_t("_operator.eq", {T(a), T(b)}), {3}, {0, 1, 0}));
  EXPECT_TRUE(tensor_near(call_t("_operator.lt", {T(a), T(b)}), {3}, {1, 0, 0}));
  EXPECT_TRUE(tensor_near(call_t("_operator.ge", {T(a), T(b)}), {3}, {0, 1, 1}));
  Tensor r = call_t("torch.gt", {T(a), I(1)});
  EXPECT_EQ(r.dtype(), DType::kBool);
  EXPECT_TRUE(tensor_near(r, {3}, {0, 1, 1}));
}

TEST(ElementwiseCompare, EveryDTypeWithBroadcastingAgainstReference) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(dtype_name(t));
    Tensor a = sample({4, 1}, t, 51), b = sample({3}, t, 52);
    for (const CmpCase& c : kCmpCases) {
      Tensor r = call_t(c.target, {T(a), T(b)});
      ASSERT_EQ(r.dtype(), DType::kBool);
      EXPECT_TRUE(tensor_near(
          r, {4, 3},
          ref_binary(a, b, {4, 3}, [&](double x, double y) { return double(c.ref(x, y)); })))
          << c.target;
    }
  }
}

TEST(ElementwiseCompare, MixedDTypesCompareInCommonType) {
  // int tensor vs 2.5 compares in float: 2 < 2.5, 3 > 2.5
  Tensor i = lt({2, 3}, {2});
  EXPECT_TRUE(tensor_near(call_t("lt", {T(i), F(2.5)}), {2}, {1, 0}));
  EXPECT_TRUE(tensor_near(call_t("eq", {T(i), F(2.0)}), {2}, {1, 0}));
  // uint8 200 vs int8 -56: compared as int16, not equal (they share the bit pattern)
  Tensor u = make({200}, {1}, DType::kUInt8), s = make({-56}, {1}, DType::kInt8);
  EXPECT_TRUE(tensor_near(call_t("eq", {T(u), T(s)}), {1}, {0}));
  EXPECT_TRUE(tensor_near(call_t("gt", {T(u), T(s)}), {1}, {1}));
  // float16 vs float32 0-dim: compared in float16 (0.1 rounds to the same half)
  Tensor h = make({0.1}, {1}, DType::kFloat16);
  EXPECT_TRUE(
      tensor_near(call_t("eq", {T(h), T(Tensor::scalar(Scalar(0.1), DType::kFloat32))}), {1}, {1}));
  // int64 vs float64 dim>0: compared in float64
  EXPECT_TRUE(tensor_near(call_t("ne", {T(i), T(dt({2.0, 3.5}, {2}))}), {2}, {0, 1}));
  // bool vs int
  EXPECT_TRUE(tensor_near(call_t("eq", {T(bt({true, false}, {2})), I(1)}), {2}, {1, 0}));
}

TEST(ElementwiseCompare, NaNComparesFalseExceptNe) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor a = dt({nan, 1}, {2});
  EXPECT_TRUE(tensor_near(call_t("eq", {T(a), T(a)}), {2}, {0, 1}));
  EXPECT_TRUE(tensor_near(call_t("ne", {T(a), T(a)}), {2}, {1, 0}));
  EXPECT_TRUE(tensor_near(call_t("le", {T(a), F(5.0)}), {2}, {0, 1}));
}

TEST(ElementwiseCompare, NonContiguousAndEmpty) {
  Tensor base = sample({3, 4}, DType::kInt32, 53);
  Tensor at = base.t(), bs = sample({4, 6}, DType::kInt64, 54).slice(1, 0, 6, 2);
  EXPECT_TRUE(
      tensor_near(call_t("le", {T(at), T(bs)}), {4, 3},
                  ref_binary(at, bs, {4, 3}, [](double x, double y) { return double(x <= y); })));
  EXPECT_EQ(call_t("eq", {T(Tensor::empty({0, 2}, DType::kFloat32)), I(0)}).shape(), (Shape{0, 2}));
  Tensor r = call_t("lt", {T(Tensor::scalar(Scalar(1), DType::kInt64)), F(1.5)});
  EXPECT_EQ(r.shape(), Shape{});
  EXPECT_EQ(r.at(0), 1);
}

TEST(ElementwiseCompare, InPlaceKeepsSelfDType) {
  Tensor x = ft({1, 5, 3}, {3});
  Value r = call("ge_", {T(x), I(3)});
  EXPECT_TRUE(r.tensor.same_view(x));
  EXPECT_EQ(x.dtype(), DType::kFloat32);
  EXPECT_TRUE(tensor_near(x, {3}, {0, 1, 1}));
  Tensor i = lt({1, 2, 3}, {3});
  call("aten.eq_.Tensor", {T(i), T(lt({1, 0, 3}, {3}))});
  EXPECT_EQ(i.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(i, {3}, {1, 0, 1}));
  std::string msg = error_of([&] { call("lt_", {T(ft({1, 2}, {2})), T(ft({1, 2, 3}, {3}))}); });
  EXPECT_TRUE(contains(msg, "[lt]") && contains(msg, "[2]") && contains(msg, "[3]")) << msg;
  msg = error_of([&] { call("gt_", {T(ft({1}, {1})), T(ft({1, 2}, {2}))}); });
  EXPECT_TRUE(contains(msg, "gt_") && contains(msg, "[1]") && contains(msg, "[2]")) << msg;
}

TEST(ElementwiseCompare, Logical) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor a = dt({0, 1, nan, -2}, {4}), b = lt({0, 0, 5, 1}, {4});
  Tensor r = call_t("logical_and", {T(a), T(b)});
  EXPECT_EQ(r.dtype(), DType::kBool);
  EXPECT_TRUE(tensor_near(r, {4}, {0, 0, 1, 1}));
  EXPECT_TRUE(tensor_near(call_t("logical_or", {T(a), T(b)}), {4}, {0, 1, 1, 1}));
  EXPECT_TRUE(tensor_near(call_t("logical_xor", {T(a), T(b)}), {4}, {0, 1, 0, 0}));
  EXPECT_TRUE(tensor_near(call_t("logical_and", {T(a), B(true)}), {4}, {0, 1, 1, 1}));
  // broadcasting and non-contiguous
  Tensor m = sample({3, 2}, DType::kInt32, 55).t();
  Tensor v = bt({true, false, true}, {3});
  EXPECT_TRUE(tensor_near(
      call_t("logical_or", {T(m), T(v)}), {2, 3},
      ref_binary(m, v, {2, 3}, [](double x, double y) { return double(x != 0 || y != 0); })));
  // in-place keeps dtype
  Tensor f = ft({0, 2}, {2});
  call("logical_or_", {T(f), T(bt({true, false}, {2}))});
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  EXPECT_TRUE(tensor_near(f, {2}, {1, 1}));
}

TEST(ElementwiseCompare, Spellings) {
  Tensor a = lt({1, 2}, {2});
  EXPECT_TRUE(tensor_near(call_t("__eq__", {T(a), I(2)}), {2}, {0, 1}));
  EXPECT_TRUE(tensor_near(call_t("torch.Tensor.__ne__", {T(a), I(2)}), {2}, {1, 0}));
  EXPECT_TRUE(tensor_near(call_t("torch.greater_equal", {T(a), I(2)}), {2}, {0, 1}));
  EXPECT_TRUE(tensor_near(call_t("torch.less", {T(a), I(2)}), {2}, {1, 0}));
  EXPECT_TRUE(tensor_near(call_t("torch.ops.aten.le.Scalar", {T(a), I(1)}), {2}, {1, 0}));
  EXPECT_TRUE(tensor_near(call_t("_operator.gt", {T(a), T(a)}), {2}, {0, 0}));
}

}  // namespace
}  // namespace inplace::testing
