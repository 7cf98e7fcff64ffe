// topk, sort, argsort, msort against a float64 reference written here (a stable sort of
// (value, index) with NaN largest): every dim, both directions, ties, NaN, strided inputs,
// empty and 0-d tensors, errors, and the compiled engine's out path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/differential.h"
#include "elementwise_test_util.h"
#include "ir/builder.h"

namespace inplace::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct RefSort {
  Shape shape;
  std::vector<double> values, indices;
};

// The first k of every lane along dim after a stable sort (NaN largest).
RefSort ref_sort(const Tensor& x, int64_t dim, int64_t k, bool descending) {
  const int64_t nd = x.dim();
  dim = dim < 0 ? dim + nd : dim;
  const Shape& s = x.shape();
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < nd; ++d) inner *= s[d];
  const int64_t len = s[dim], outer = len == 0 ? 0 : x.numel() / (len * inner);
  RefSort r;
  r.shape = s;
  r.shape[dim] = k;
  r.values.assign(static_cast<size_t>(numel_of(r.shape)), 0);
  r.indices.assign(r.values.size(), 0);
  // NaN sorts as +inf beyond every number: rank it explicitly.
  auto key = [](double v) { return std::isnan(v) ? std::make_pair(1, 0.0) : std::make_pair(0, v); };
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      std::vector<std::pair<double, int64_t>> lane;
      for (int64_t i = 0; i < len; ++i) lane.push_back({x.at((o * len + i) * inner + in), i});
      std::stable_sort(lane.begin(), lane.end(), [&](const auto& a, const auto& b) {
        return descending ? key(a.first) > key(b.first) : key(a.first) < key(b.first);
      });
      for (int64_t i = 0; i < k; ++i) {
        const size_t at = static_cast<size_t>((o * k + i) * inner + in);
        r.values[at] = lane[i].first;
        r.indices[at] = static_cast<double>(lane[i].second);
      }
    }
  return r;
}

// Values with ties (few distinct values) and, for floats, NaN.
Tensor tied(const Shape& s, DType dt, uint32_t seed) {
  Tensor x = sample(s, DType::kFloat64, seed);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double& v = x.data<double>()[i];
    v = std::round(v);  // [-2, 2]: many ties
    if (is_floating(dt) && (i * 7 + seed) % 11 == 3) v = kNaN;
    if (dt == DType::kUInt8) v = std::fabs(v);
    if (dt == DType::kBool) v = v > 0;
  }
  return x.to(dt);
}

TEST(SortOps, TopkEveryDimDirectionAndDtype) {
  for (DType dt : kAllDTypes) {
    if (dt == DType::kBool) continue;  // torch has no bool topk
    const Tensor x = tied({3, 5, 4}, dt, 1);
    for (int64_t dim = -3; dim < 3; ++dim)
      for (bool largest : {true, false})
        for (int64_t k : {0, 1, 3}) {
          SCOPED_TRACE(str_cat(dtype_name(dt), " dim ", dim, " largest ", largest, " k ", k));
          Value r = call("torch.topk", {T(x), I(k)}, {{"dim", I(dim)}, {"largest", B(largest)}});
          ASSERT_EQ(r.items.size(), 2u);
          const RefSort ref = ref_sort(x, dim, k, largest);
          EXPECT_TRUE(tensor_near(r.items[0].tensor, ref.shape, ref.values, 0));
          EXPECT_EQ(r.items[0].tensor.dtype(), dt);
          EXPECT_EQ(r.items[1].tensor.dtype(), DType::kInt64);
          EXPECT_TRUE(tensor_near(r.items[1].tensor, ref.shape, ref.indices, 0));
        }
  }
}

TEST(SortOps, TopkNaNCountsAsLargestAndTiesTakeTheLowerIndex) {
  const Tensor x = ft({1, NAN, 3, 3, NAN, 0}, {6});
  Value r = call("topk", {T(x), I(3)});
  EXPECT_TRUE(tensor_near(r.items[0].tensor, {3}, {kNaN, kNaN, 3}));
  EXPECT_TRUE(tensor_near(r.items[1].tensor, {3}, {1, 4, 2}));
  r = call("topk", {T(x), I(3), I(0), B(false)});
  EXPECT_TRUE(tensor_near(r.items[0].tensor, {3}, {0, 1, 3}));
  EXPECT_TRUE(tensor_near(r.items[1].tensor, {3}, {5, 0, 2}));
  // k == size is a full sort.
  r = call("aten.topk.default", {T(x), I(6)});
  EXPECT_TRUE(tensor_near(r.items[1].tensor, {6}, {1, 4, 2, 3, 0, 5}));
}

TEST(SortOps, SortArgsortMsort) {
  for (DType dt : kAllDTypes) {
    const Tensor x = tied({4, 6}, dt, 2);
    for (int64_t dim : {-1, 0, 1})
      for (bool desc : {false, true}) {
        SCOPED_TRACE(str_cat(dtype_name(dt), " dim ", dim, " descending ", desc));
        const RefSort ref = ref_sort(x, dim, x.size(dim), desc);
        Value r = call("torch.sort", {T(x)}, {{"dim", I(dim)}, {"descending", B(desc)}});
        EXPECT_TRUE(tensor_near(r.items[0].tensor, ref.shape, ref.values, 0));
        EXPECT_TRUE(tensor_near(r.items[1].tensor, ref.shape, ref.indices, 0));
        r = call("sort", {T(x)}, {{"stable", B(true)}, {"dim", I(dim)}, {"descending", B(desc)}});
        EXPECT_TRUE(tensor_near(r.items[1].tensor, ref.shape, ref.indices, 0));
        const Tensor idx = call_t("argsort", {T(x), I(dim), B(desc)});
        EXPECT_TRUE(tensor_near(idx, ref.shape, ref.indices, 0));
      }
    const RefSort ref0 = ref_sort(x, 0, x.size(0), false);
    EXPECT_TRUE(tensor_near(call_t("torch.msort", {T(x)}), ref0.shape, ref0.values, 0));
  }
}

TEST(SortOps, StridedInputs) {
  const Tensor base = tied({6, 8}, DType::kFloat32, 3);
  for (const Tensor& x : {base.t(), base.slice(0, 1, 6, 2).slice(1, 0, 8, 3)}) {
    ASSERT_FALSE(x.is_contiguous());
    for (int64_t dim : {0, 1}) {
      RefSort ref = ref_sort(x, dim, 2, true);
      Value r = call("topk", {T(x), I(2), I(dim)});
      EXPECT_TRUE(tensor_near(r.items[0].tensor, ref.shape, ref.values, 0));
      EXPECT_TRUE(tensor_near(r.items[1].tensor, ref.shape, ref.indices, 0));
      ref = ref_sort(x, dim, x.size(dim), false);
      r = call("sort", {T(x), I(dim)});
      EXPECT_TRUE(tensor_near(r.items[0].tensor, ref.shape, ref.values, 0));
      EXPECT_TRUE(tensor_near(r.items[1].tensor, ref.shape, ref.indices, 0));
    }
  }
  // Half types compare in float.
  const Tensor h = ft({0.5f, -1.25f, 2.0f, 0.5f}, {4}).to(DType::kBFloat16);
  Value r = call("topk", {T(h), I(2)});
  EXPECT_TRUE(tensor_near(r.items[0].tensor, {2}, {2.0, 0.5}));
  EXPECT_TRUE(tensor_near(r.items[1].tensor, {2}, {2, 0}));
}

TEST(SortOps, EmptyAndZeroDim) {
  const Tensor e = Tensor::empty({0, 4}, DType::kFloat32);
  Value r = call("topk", {T(e), I(2)});
  EXPECT_EQ(r.items[0].tensor.shape(), (Shape{0, 2}));
  r = call("topk", {T(e), I(0), I(0)});
  EXPECT_EQ(r.items[1].tensor.shape(), (Shape{0, 4}));
  r = call("sort", {T(e), I(0)});
  EXPECT_EQ(r.items[0].tensor.shape(), (Shape{0, 4}));
  const Tensor s = Tensor::scalar(Scalar(3.0), DType::kFloat32);
  r = call("topk", {T(s), I(1)});
  EXPECT_TRUE(tensor_near(r.items[0].tensor, {}, {3}));
  EXPECT_TRUE(tensor_near(r.items[1].tensor, {}, {0}));
  r = call("sort", {T(s)});
  EXPECT_TRUE(tensor_near(r.items[0].tensor, {}, {3}));
}

TEST(SortOps, Errors) {
  const Tensor x = Tensor::zeros({2, 3}, DType::kFloat32);
  std::string e = error_of([&] { call("topk", {T(x), I(4)}); });
  EXPECT_TRUE(contains(e, "[topk] k (4) is out of range") && contains(e, "[2,3]")) << e;
  e = error_of([&] { call("topk", {T(x), I(-1)}); });
  EXPECT_TRUE(contains(e, "[topk]") && contains(e, "[2,3]")) << e;
  e = error_of([&] { call("topk", {T(x), I(1), I(2)}); });
  EXPECT_TRUE(contains(e, "[topk] dim 2")) << e;
  e = error_of([&] { call("topk", {T(Tensor::zeros({3}, DType::kBool)), I(1)}); });
  EXPECT_TRUE(contains(e, "[topk]") && contains(e, "bool")) << e;
  e = error_of([&] { call("sort", {T(x), I(-3)}); });
  EXPECT_TRUE(contains(e, "[sort] dim -3")) << e;
}

TEST(SortOps, CompiledEqualsEager) {
  GraphBuilder b("topk_sampling");
  Node* logits = b.placeholder("logits");
  Node* top = b.call_function("torch.topk", {logits, 3});
  Node* vals = b.call_function("_operator.getitem", {top, 0});
  Node* idx = b.call_function("_operator.getitem", {top, 1});
  Node* sorted = b.call_method("sort", {logits}, {{"descending", true}});
  Node* order = b.call_function("_operator.getitem", {sorted, 1});
  Node* cum =
      b.call_function("torch.cumsum", {b.call_function("_operator.getitem", {sorted, 0}), -1});
  Node* arg = b.call_function("torch.argsort", {logits}, {{"dim", 0}});
  b.outputs({vals, idx, order, cum, arg});
  auto g = b.build();
  expect_compiled_equals_eager(*g, {tied({2, 7}, DType::kFloat32, 4)});
}

}  // namespace
}  // namespace inplace::testing
