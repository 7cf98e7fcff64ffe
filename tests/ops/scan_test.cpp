// cumsum / cumprod (and cumsum_) against float64 lane loops written here: every dim, negative
// dims, every dtype with torch's int64 rule, dtype=, strided inputs, empty and 0-d tensors, and
// the compiled engine's out path.
#include <gtest/gtest.h>

#include "compiler/differential.h"
#include "elementwise_test_util.h"
#include "ir/builder.h"

namespace inplace::testing {
namespace {

// Reference scan of x (read through at(), so any strides) along dim, in double.
std::vector<double> ref_scan(const Tensor& x, int64_t dim, bool prod) {
  const Shape& s = x.shape();
  const int64_t nd = x.dim();
  if (nd == 0) return {x.at(0)};
  dim = dim < 0 ? dim + nd : dim;
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < nd; ++d) inner *= s[d];
  const int64_t len = s[dim], outer = len == 0 ? 0 : x.numel() / (len * inner);
  std::vector<double> out(static_cast<size_t>(x.numel()));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      double acc = prod ? 1 : 0;
      for (int64_t i = 0; i < len; ++i) {
        const int64_t flat = (o * len + i) * inner + in;
        acc = prod ? acc * x.at(flat) : acc + x.at(flat);
        out[flat] = acc;
      }
    }
  return out;
}

DType scan_result(DType in) {
  return is_integral(in, true) ? DType::kInt64 : in;
}

TEST(ScanOps, CumsumEveryDimAndDtype) {
  for (DType dt : kAllDTypes) {
    const Tensor x = sample({3, 4, 5}, dt, 1);
    for (int64_t dim = -3; dim < 3; ++dim) {
      SCOPED_TRACE(str_cat(dtype_name(dt), " dim ", dim));
      const Tensor y = call_t("torch.cumsum", {T(x), I(dim)});
      EXPECT_EQ(y.dtype(), scan_result(dt));
      // Half types round every partial sum; the reference does not.
      const double tol = dt == DType::kFloat16 ? 4e-3 : dt == DType::kBFloat16 ? 3e-2 : 1e-6;
      EXPECT_TRUE(tensor_near(y, x.shape(), ref_scan(x, dim, false), tol));
    }
  }
}

TEST(ScanOps, CumprodEveryDimAndDtype) {
  for (DType dt : kAllDTypes) {
    // Small factors so products stay exact-ish: floats in [0.5, 1.5], integers in [-2, 2].
    Tensor x = sample({2, 3, 4}, DType::kFloat64, 2);
    for (int64_t i = 0; i < x.numel(); ++i) {
      double& v = x.data<double>()[i];
      v = is_floating(dt) ? 1.0 + v / 16.0 : std::fmod(v, 3.0);
      if (dt == DType::kUInt8 || dt == DType::kBool) v = std::fabs(v) > 0 ? 1 + (i % 2) : 0;
      if (dt == DType::kBool) v = v != 0;
    }
    x = x.to(dt);
    for (int64_t dim = -3; dim < 3; ++dim) {
      SCOPED_TRACE(str_cat(dtype_name(dt), " dim ", dim));
      const Tensor y = call_t("cumprod", {T(x), I(dim)});
      EXPECT_EQ(y.dtype(), scan_result(dt));
      const double tol = dt == DType::kFloat16 ? 4e-3 : dt == DType::kBFloat16 ? 3e-2 : 1e-6;
      EXPECT_TRUE(tensor_near(y, x.shape(), ref_scan(x, dim, true), tol));
    }
  }
}

TEST(ScanOps, StridedInputsAndBlockedLanes) {
  // [5, 130] along dim 0 scans 130 adjacent lanes in blocks (more than one block of 64).
  const Tensor base = sample({5, 130}, DType::kFloat32, 3);
  EXPECT_TRUE(
      tensor_near(call_t("cumsum", {T(base), I(0)}), base.shape(), ref_scan(base, 0, false), 1e-6));
  // Transposed: lanes along dim 1 are strided, adjacent lanes contiguous.
  const Tensor t = base.t();
  EXPECT_TRUE(tensor_near(call_t("cumsum", {T(t), I(1)}), t.shape(), ref_scan(t, 1, false), 1e-6));
  EXPECT_TRUE(tensor_near(call_t("cumsum", {T(t), I(0)}), t.shape(), ref_scan(t, 0, false), 1e-6));
  // A stepped slice of a 3-D tensor, int32 widening to int64.
  const Tensor s = sample({4, 6, 5}, DType::kInt32, 4).slice(1, 1, 6, 2).slice(2, 0, 5, 3);
  ASSERT_FALSE(s.is_contiguous());
  for (int64_t dim : {0, 1, -1}) {
    const Tensor y = call_t("cumsum", {T(s), I(dim)});
    EXPECT_EQ(y.dtype(), DType::kInt64);
    EXPECT_TRUE(tensor_near(y, s.shape(), ref_scan(s, dim, false), 0));
  }
}

TEST(ScanOps, DtypeArgument) {
  const Tensor i = lt({1, 2, 3}, {3});
  Tensor y = call_t("cumsum", {T(i), I(0)}, {{"dtype", Dt(DType::kFloat32)}});
  EXPECT_EQ(y.dtype(), DType::kFloat32);
  EXPECT_TRUE(tensor_near(y, {3}, {1, 3, 6}));
  // float -> int64 converts (truncating) before summing, like torch's x.to(dtype).cumsum().
  y = call_t("cumsum", {T(ft({1.5f, 2.7f, -0.5f}, {3})), I(0)}, {{"dtype", Dt(DType::kInt64)}});
  EXPECT_EQ(y.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(y, {3}, {1, 3, 3}));
  // An explicit narrower dtype keeps it: int8 wraps.
  y = call_t("cumsum", {T(lt({100, 100}, {2})), I(0)}, {{"dtype", Dt(DType::kInt8)}});
  EXPECT_EQ(y.dtype(), DType::kInt8);
  EXPECT_TRUE(tensor_near(y, {2}, {100, -56}));
  // bool counts as int64; with dtype=bool the sum is a running "or" and the product an "and".
  const Tensor m = bt({false, true, false, true}, {4});
  EXPECT_TRUE(tensor_equal(call_t("cumsum", {T(m), I(0)}), lt({0, 1, 1, 2}, {4})));
  EXPECT_TRUE(tensor_equal(call_t("cumsum", {T(m), I(0)}, {{"dtype", Dt(DType::kBool)}}),
                           bt({false, true, true, true}, {4})));
  EXPECT_TRUE(tensor_equal(call_t("cumprod", {T(bt({true, true, false, true}, {4})), I(0)}),
                           lt({1, 1, 0, 0}, {4})));
}

TEST(ScanOps, EmptyAndZeroDim) {
  for (int64_t dim : {0, 1}) {
    const Tensor e = Tensor::empty({0, 3}, DType::kFloat32);
    const Tensor y = call_t("cumsum", {T(e), I(dim)});
    EXPECT_EQ(y.shape(), (Shape{0, 3}));
  }
  const Tensor s = Tensor::scalar(Scalar(2.5), DType::kFloat32);
  for (int64_t dim : {0, -1}) {
    EXPECT_TRUE(tensor_near(call_t("cumsum", {T(s), I(dim)}), {}, {2.5}));
    EXPECT_TRUE(tensor_near(call_t("cumprod", {T(s), I(dim)}), {}, {2.5}));
  }
  const Tensor si = Tensor::scalar(Scalar(int64_t{3}), DType::kInt32);
  EXPECT_TRUE(
      tensor_equal(call_t("cumsum", {T(si), I(0)}), Tensor::scalar(Scalar(3), DType::kInt64)));
}

TEST(ScanOps, InPlaceAndSpellings) {
  Tensor x = ft({1, 2, 3, 4, 5, 6}, {2, 3});
  Value r = call("cumsum_", {T(x), I(-1)});
  EXPECT_TRUE(r.as_tensor("r").same_view(x));
  EXPECT_TRUE(tensor_near(x, {2, 3}, {1, 3, 6, 4, 9, 15}));
  // int32 keeps its dtype in place (the int64 result casts back).
  Tensor xi = Tensor::from_vector<int32_t>({1, 2, 3}, {3});
  call("torch.ops.aten.cumprod_.default", {T(xi), I(0)});
  EXPECT_EQ(xi.dtype(), DType::kInt32);
  EXPECT_TRUE(tensor_near(xi, {3}, {1, 2, 6}));
  // A strided view in place writes through to its base.
  Tensor base = ft({1, 2, 3, 4, 5, 6}, {2, 3});
  call("cumsum_", {T(base.t()), I(1)});
  EXPECT_TRUE(tensor_near(base, {2, 3}, {1, 2, 3, 5, 7, 9}));
  const Tensor a = ft({1, 2, 3}, {3});
  for (const char* target :
       {"torch.cumsum", "cumsum", "aten.cumsum.default", "torch.ops.aten.cumsum.default"})
    EXPECT_TRUE(tensor_near(call_t(target, {T(a)}, {{"dim", I(0)}}), {3}, {1, 3, 6})) << target;
}

TEST(ScanOps, Errors) {
  const Tensor x = Tensor::zeros({2, 3}, DType::kFloat32);
  std::string e = error_of([&] { call("cumsum", {T(x), I(2)}); });
  EXPECT_TRUE(contains(e, "[cumsum]") && contains(e, "dim 2")) << e;
  e = error_of([&] { call("cumprod", {T(x), I(-3)}); });
  EXPECT_TRUE(contains(e, "[cumprod]")) << e;
  // float -> int is not a legal in-place cast.
  Tensor xi = Tensor::zeros({2}, DType::kInt64);
  e = error_of([&] { call("cumsum_", {T(xi), I(0)}, {{"dtype", Dt(DType::kFloat32)}}); });
  EXPECT_TRUE(contains(e, "[cumsum_]") && contains(e, "float32") && contains(e, "int64")) << e;
}

TEST(ScanOps, CompiledEqualsEager) {
  GraphBuilder b("scan");
  Node* x = b.placeholder("x");
  Node* mask = b.placeholder("mask");
  Node* y = b.call_function("torch.cumsum", {x, 1});
  Node* pos = b.call_method("cumsum", {mask, -1});  // position ids from an attention mask
  Node* p = b.call_function("torch.cumprod", {x}, {{"dim", 0}, {"dtype", DType::kFloat64}});
  b.call_method("cumsum_", {x, 0});
  b.outputs({y, pos, p, b.call_method("mul", {x, 2.0})});
  auto g = b.build();
  Tensor m = bt({true, true, false, true, false, true, true, true}, {2, 4});
  expect_compiled_equals_eager(*g, {sample({2, 4}, DType::kFloat32, 5), m});
}

}  // namespace
}  // namespace inplace::testing
