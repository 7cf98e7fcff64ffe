#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/elementwise_test_util.h"

namespace inplace::testing {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(ElementwiseSelect, WhereHandWorkedAndBroadcast) {
  Tensor c = bt({true, false, true}, {3});
  Tensor a = ft({1, 2, 3}, {3}), b = ft({-1, -2, -3}, {3});
  EXPECT_TRUE(tensor_near(call_t("torch.where", {T(c), T(a), T(b)}), {3}, {1, -2, 3}));
  // cond [2,1], a [3], b 0-dim -> [2,3]
  Tensor c2 = bt({true, false}, {2, 1});
  Tensor s = Tensor::scalar(Scalar(9.0), DType::kFloat32);
  Tensor r = call_t("where", {T(c2), T(a), T(s)});
  EXPECT_TRUE(tensor_near(r, {2, 3}, {1, 2, 3, 9, 9, 9}));
  // reference over a transposed condition and strided branches, float64
  Tensor cond = sample({4, 3}, DType::kBool, 61).t();  // [3,4]
  Tensor x = sample({3, 8}, DType::kFloat64, 62).slice(1, 0, 8, 2);
  Tensor y = sample({4}, DType::kFloat64, 63);
  std::vector<double> want(12);
  for (int64_t i = 0; i < 12; ++i)
    want[i] = cond.at(i) != 0 ? x.at(i) : y.at(broadcast_index(y, {3, 4}, i));
  EXPECT_TRUE(tensor_near(call_t("where", {T(cond), T(x), T(y)}), {3, 4}, want));
}

TEST(ElementwiseSelect, WhereScalarsAndPromotion) {
  Tensor c = bt({true, false}, {2});
  Tensor i = lt({5, 6}, {2});
  Tensor r = call_t("where", {T(c), T(i), F(2.5)});
  EXPECT_EQ(r.dtype(), DType::kFloat32);
  EXPECT_TRUE(tensor_near(r, {2}, {5, 2.5}));
  r = call_t("where", {T(c), I(1), T(i)});
  EXPECT_EQ(r.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(r, {2}, {1, 6}));
  r = call_t("aten.where.Scalar", {T(c), F(1.0), I(0)});
  EXPECT_EQ(r.dtype(), DType::kFloat32);
  EXPECT_TRUE(tensor_near(r, {2}, {1, 0}));
  r = call_t("where", {T(c), T(make({1, 2}, {2}, DType::kFloat16)), F(-1e9)});
  EXPECT_EQ(r.dtype(), DType::kFloat16);
  EXPECT_TRUE(std::isinf(r.at(1)));  // -1e9 overflows half, as in torch
  r = call_t("where",
             {T(c), T(make({1, 2}, {2}, DType::kInt32)), T(make({3, 4}, {2}, DType::kInt16))});
  EXPECT_EQ(r.dtype(), DType::kInt32);
  // uint8 condition counts nonzero as true
  r = call_t("where", {T(make({0, 7}, {2}, DType::kUInt8)), I(1), I(2)});
  EXPECT_TRUE(tensor_near(r, {2}, {2, 1}));
}

TEST(ElementwiseSelect, WhereErrors) {
  std::string msg = error_of([&] { call("where", {T(ft({1}, {1})), I(1), I(2)}); });
  EXPECT_TRUE(contains(msg, "[where]") && contains(msg, "float32")) << msg;
  msg = error_of([&] { call("where", {T(bt({true, false}, {2})), T(ft({1, 2, 3}, {3})), I(0)}); });
  EXPECT_TRUE(contains(msg, "[where]") && contains(msg, "[2]") && contains(msg, "[3]")) << msg;
  EXPECT_EQ(call_t("where", {T(Tensor::empty({0}, DType::kBool)), I(1), I(2)}).shape(), (Shape{0}));
}

TEST(ElementwiseSelect, ClampScalarBounds) {
  Tensor x = dt({-3, -1, 0.5, 2, 7, kNaN}, {6});
  EXPECT_TRUE(tensor_near(call_t("clamp", {T(x), I(-1), I(2)}), {6}, {-1, -1, 0.5, 2, 2, kNaN}));
  EXPECT_TRUE(
      tensor_near(call_t("clamp", {T(x)}, {{"min", F(0.0)}}), {6}, {0, 0, 0.5, 2, 7, kNaN}));
  EXPECT_TRUE(
      tensor_near(call_t("clamp", {T(x)}, {{"max", F(0.0)}}), {6}, {-3, -1, 0, 0, 0, kNaN}));
  EXPECT_TRUE(tensor_near(call_t("clamp_min", {T(x), I(1)}), {6}, {1, 1, 1, 2, 7, kNaN}));
  EXPECT_TRUE(tensor_near(call_t("clamp_max", {T(x), I(1)}), {6}, {-3, -1, 0.5, 1, 1, kNaN}));
  EXPECT_TRUE(
      tensor_near(call_t("torch.clip", {T(x), I(-1), I(2)}), {6}, {-1, -1, 0.5, 2, 2, kNaN}));
  // min > max gives max everywhere, like torch
  EXPECT_TRUE(tensor_near(call_t("clamp", {T(x), I(3), I(1)}), {6}, {1, 1, 1, 1, 1, kNaN}));
  // reference loop over a non-contiguous input
  Tensor y = sample({3, 4}, DType::kFloat32, 64).t();
  EXPECT_TRUE(
      tensor_near(call_t("clamp", {T(y), F(-0.5), F(0.75)}), {4, 3},
                  ref_unary(y, [](double v) { return std::min(std::max(v, -0.5), 0.75); })));
  std::string msg = error_of([&] { call("clamp", {T(x)}); });
  EXPECT_TRUE(contains(msg, "[clamp]") && contains(msg, "min") && contains(msg, "max")) << msg;
}

TEST(ElementwiseSelect, ClampDTypes) {
  // an integer tensor clamped by a float promotes (torch >= 1.13); a float one keeps its dtype
  Tensor i = lt({-2, 0, 5}, {3});
  Tensor r = call_t("clamp", {T(i), F(0.5)});
  EXPECT_EQ(r.dtype(), DType::kFloat32);
  EXPECT_TRUE(tensor_near(r, {3}, {0.5, 0.5, 5}));
  r = call_t("clamp", {T(i), I(0), I(3)});
  EXPECT_EQ(r.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(r, {3}, {0, 0, 3}));
  Tensor h = make({-2, 0.25, 5}, {3}, DType::kFloat16);
  r = call_t("clamp", {T(h), F(0.0), F(1.0)});
  EXPECT_EQ(r.dtype(), DType::kFloat16);
  EXPECT_TRUE(tensor_near(r, {3}, {0, 0.25, 1}));
  for (DType t : kAllDTypes) {
    if (t == DType::kBool) continue;
    SCOPED_TRACE(dtype_name(t));
    Tensor x = sample({5}, t, 65);
    Tensor c = call_t("clamp", {T(x), I(1), I(4)});
    EXPECT_EQ(c.dtype(), t);
    EXPECT_TRUE(
        tensor_near(c, {5}, ref_unary(x, [](double v) { return std::clamp(v, 1.0, 4.0); })));
  }
}

TEST(ElementwiseSelect, ClampTensorBounds) {
  Tensor x = ft({-3, 0, 3, 6, 1, 1}, {2, 3});
  Tensor lo = ft({-1, 1, 2}, {3}), hi = ft({2, 5}, {2, 1});
  Tensor r = call_t("clamp", {T(x), T(lo), T(hi)});
  EXPECT_TRUE(tensor_near(r, {2, 3}, {-1, 1, 2, 5, 1, 2}));
  EXPECT_TRUE(tensor_near(call_t("aten.clamp.Tensor", {T(x)}, {{"max", T(hi)}}), {2, 3},
                          {-3, 0, 2, 5, 1, 1}));
  EXPECT_TRUE(tensor_near(call_t("clamp_min", {T(x), T(lo)}), {2, 3}, {-1, 1, 3, 6, 1, 2}));
  EXPECT_TRUE(
      tensor_near(call_t("aten.clamp_max.Tensor", {T(x), T(hi)}), {2, 3}, {-3, 0, 2, 5, 1, 1}));
  // NaN in a tensor bound gives NaN
  Tensor nan_lo = dt({kNaN, 0}, {2});
  EXPECT_TRUE(
      tensor_near(call_t("clamp", {T(dt({1, -1}, {2}))}, {{"min", T(nan_lo)}}), {2}, {kNaN, 0}));
  // bounds promote: float16 self with float32 tensor bounds -> float32
  Tensor h = make({1, 2}, {2}, DType::kFloat16);
  EXPECT_EQ(call_t("clamp", {T(h), T(ft({0, 0}, {2}))}).dtype(), DType::kFloat32);
  // bound shape does not broadcast
  std::string msg = error_of([&] { call("clamp", {T(x), T(ft({1, 2}, {2}))}); });
  EXPECT_TRUE(contains(msg, "[clamp]") && contains(msg, "[2,3]") && contains(msg, "[2]")) << msg;
}

TEST(ElementwiseSelect, ClampInPlace) {
  Tensor x = ft({-3, 0, 3}, {3});
  void* p = x.data_ptr();
  call("clamp_", {T(x), I(-1), I(1)});
  EXPECT_EQ(x.data_ptr(), p);
  EXPECT_TRUE(tensor_near(x, {3}, {-1, 0, 1}));
  call("clamp_min_", {T(x), F(0.5)});
  EXPECT_TRUE(tensor_near(x, {3}, {0.5, 0.5, 1}));
  call("clip_", {T(x)}, {{"max", F(0.75)}});
  EXPECT_TRUE(tensor_near(x, {3}, {0.5, 0.5, 0.75}));
  Tensor i = lt({-3, 3}, {2});
  std::string msg = error_of([&] { call("clamp_", {T(i), F(0.5)}); });
  EXPECT_TRUE(contains(msg, "clamp_") && contains(msg, "can't be cast")) << msg;
  call("clamp_max_", {T(i), I(0)});
  EXPECT_TRUE(tensor_near(i, {2}, {-3, 0}));
}

TEST(ElementwiseSelect, MaskedFill) {
  Tensor x = ft({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor mask = bt({true, false, true}, {3});
  Tensor r = call_t("masked_fill", {T(x), T(mask), F(-1.5)});
  EXPECT_TRUE(tensor_near(r, {2, 3}, {-1.5, 2, -1.5, -1.5, 5, -1.5}));
  EXPECT_TRUE(tensor_near(x, {2, 3}, {1, 2, 3, 4, 5, 6}));  // functional: x untouched
  // value as a 0-dim tensor; int self takes the value cast (truncated)
  Tensor i = lt({1, 2, 3}, {3});
  r = call_t("aten.masked_fill.Tensor",
             {T(i), T(mask), T(Tensor::scalar(Scalar(7.9), DType::kFloat32))});
  EXPECT_EQ(r.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(r, {3}, {7, 2, 7}));
  // the result broadcasts self and mask both ways
  Tensor col = bt({true, false}, {2, 1});
  EXPECT_TRUE(tensor_near(call_t("masked_fill", {T(ft({1, 2, 3}, {3})), T(col), I(0)}), {2, 3},
                          {0, 0, 0, 1, 2, 3}));
  // non-contiguous self: -inf fill like an attention mask
  Tensor scores = sample({3, 3}, DType::kFloat32, 66).t();
  Tensor causal = bt({false, true, true, false, false, true, false, false, false}, {3, 3});
  r = call_t("masked_fill", {T(scores), T(causal), F(-INFINITY)});
  for (int64_t k = 0; k < 9; ++k)
    EXPECT_EQ(r.at(k), causal.at(k) != 0 ? -INFINITY : scores.at(k)) << k;
}

TEST(ElementwiseSelect, MaskedFillInPlaceAndErrors) {
  Tensor x = ft({1, 2, 3, 4}, {2, 2});
  void* p = x.data_ptr();
  call("masked_fill_", {T(x), T(bt({false, true}, {2})), I(0)});
  EXPECT_EQ(x.data_ptr(), p);
  EXPECT_TRUE(tensor_near(x, {2, 2}, {1, 0, 3, 0}));
  std::string msg = error_of([&] {
    call("masked_fill", {T(x), T(make({1, 0}, {2}, DType::kUInt8)), I(0)});
  });
  EXPECT_TRUE(contains(msg, "[masked_fill]") && contains(msg, "uint8")) << msg;
  msg = error_of([&] {
    call("masked_fill", {T(x), T(bt({true, true}, {2})), T(ft({1, 2}, {2}))});
  });
  EXPECT_TRUE(contains(msg, "[masked_fill]") && contains(msg, "0-dimensional")) << msg;
  // a mask that broadcasts x to a bigger shape cannot be written back into x
  msg = error_of([&] { call("masked_fill_", {T(x), T(bt({true, true}, {2, 1, 1})), I(0)}); });
  EXPECT_TRUE(contains(msg, "masked_fill_") && contains(msg, "[2,2]") && contains(msg, "[2,2,2]"))
      << msg;
  msg = error_of([&] { call("masked_fill", {T(x), T(bt({true, true, true}, {3})), I(0)}); });
  EXPECT_TRUE(contains(msg, "[masked_fill]") && contains(msg, "[2,2]") && contains(msg, "[3]"))
      << msg;
}

}  // namespace
}  // namespace inplace::testing
