// setitem: x[index] = value writes self in place, for every index form. Each test compares the
// whole tensor against a copy edited by hand (element loops), so stray writes are caught too.
#include "ops/index_test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

Tensor X() {
  return iota({2, 3, 4});
}

void set(const Tensor& x, Value index, Value value) {
  Value r = call("_operator.setitem", {T(x), std::move(index), std::move(value)});
  EXPECT_TRUE(r.is_none());
}

// x[i][j][k] = 12i + 4j + k, with the listed (flat index, value) edits.
std::vector<double> edited(int64_t n, const std::vector<std::pair<int64_t, double>>& edits) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i);
  for (auto [i, val] : edits) v.at(static_cast<size_t>(i)) = val;
  return v;
}

}  // namespace

TEST(IndexSetitem, IntAndNegativeInt) {
  Tensor x = X();
  void* data = x.data_ptr();
  set(x, I(-1), F(5.0));  // x[1] = 5
  std::vector<std::pair<int64_t, double>> e;
  for (int64_t i = 12; i < 24; ++i) e.push_back({i, 5});
  EXPECT_TRUE(tensor_near(x, {2, 3, 4}, edited(24, e)));
  EXPECT_EQ(x.data_ptr(), data);            // same storage, written in place
  set(x, Tup({I(0), I(2), I(-1)}), I(-7));  // x[0, 2, -1] = -7
  e.push_back({11, -7});
  EXPECT_TRUE(tensor_near(x, {2, 3, 4}, edited(24, e)));
}

TEST(IndexSetitem, StepSliceWithBroadcastValue) {
  Tensor x = X();
  set(x, Tup({All(), Sl(None(), None(), I(2))}), T(ft({-1, -2, -3, -4}, {4})));  // x[:, ::2] = v
  std::vector<std::pair<int64_t, double>> e;
  for (int64_t i : {0, 1})
    for (int64_t j : {0, 2})
      for (int64_t k = 0; k < 4; ++k) e.push_back({12 * i + 4 * j + k, -(k + 1)});
  EXPECT_TRUE(tensor_near(x, {2, 3, 4}, edited(24, e)));
}

TEST(IndexSetitem, LeadingUnitDimsOfValueAreDropped) {
  Tensor x = X();
  set(x, I(0), T(Tensor::full({1, 1, 3, 4}, Scalar(9.0), DType::kFloat32)));  // x[0] = v[1,1,3,4]
  std::vector<std::pair<int64_t, double>> e;
  for (int64_t i = 0; i < 12; ++i) e.push_back({i, 9});
  EXPECT_TRUE(tensor_near(x, {2, 3, 4}, edited(24, e)));
  EXPECT_TRUE(throws_with(
      [&] {
        set(x, I(0), T(Tensor::full({2, 3, 4}, Scalar(1.0), DType::kFloat32)));
      },
      {"[setitem]", "[2,3,4]", "[3,4]"}));
}

TEST(IndexSetitem, NoneAndEllipsis) {
  Tensor x = X();
  set(x, Tup({E(), I(0)}), T(ft({-1, -2, -3, -4, -5, -6}, {2, 3})));  // x[..., 0] = v
  std::vector<std::pair<int64_t, double>> e;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) e.push_back({12 * i + 4 * j, -(3 * i + j + 1)});
  EXPECT_TRUE(tensor_near(x, {2, 3, 4}, edited(24, e)));
  set(x, Tup({None(), I(1), E(), I(3)}), F(100));  // x[None, 1, ..., 3] = 100
  for (int64_t j = 0; j < 3; ++j) e.push_back({12 + 4 * j + 3, 100});
  EXPECT_TRUE(tensor_near(x, {2, 3, 4}, edited(24, e)));
}

TEST(IndexSetitem, BoolMaskWithScalarAndWithVector) {
  Tensor x = X();
  Tensor m = bt({true, false, true, false, true, false}, {2, 3});
  set(x, T(m), F(0));  // rows (0,0), (0,2), (1,1) -> 0
  std::vector<std::pair<int64_t, double>> e;
  for (int64_t base : {0, 8, 16})
    for (int64_t k = 0; k < 4; ++k) e.push_back({base + k, 0});
  EXPECT_TRUE(tensor_near(x, {2, 3, 4}, edited(24, e)));
  // x[mask] = vals, vals holding mask.sum() elements
  Tensor y = iota({2, 3});
  Tensor m2 = bt({false, true, true, false, false, true}, {2, 3});
  set(y, T(m2), T(ft({-1, -2, -3}, {3})));
  EXPECT_TRUE(tensor_near(y, {2, 3}, {0, -1, -2, 3, 4, -3}));
  // a [k, D] value for a mask over the leading dims
  Tensor z = X();
  set(z, T(m), T(ft({-1, -2, -3}, {3, 1})));
  std::vector<std::pair<int64_t, double>> ez;
  int64_t r = 0;
  for (int64_t base : {0, 8, 16}) {
    ++r;
    for (int64_t k = 0; k < 4; ++k) ez.push_back({base + k, -r});
  }
  EXPECT_TRUE(tensor_near(z, {2, 3, 4}, edited(24, ez)));
  EXPECT_TRUE(throws_with(
      [&] {
        set(y, T(m2), T(ft({1, 2}, {2})));
      },
      {"[setitem]", "value tensor of shape [2]", "indexing result of shape [3]"}));
}

TEST(IndexSetitem, IntTensorListAndDuplicatesLastWins) {
  Tensor x = iota({5});
  set(x, T(lt({4, 0, 4}, {3})), T(ft({10, 11, 12}, {3})));
  EXPECT_TRUE(tensor_near(x, {5}, {11, 1, 2, 3, 12}));
  set(x, L({I(1), I(-2)}), F(-1));
  EXPECT_TRUE(tensor_near(x, {5}, {11, -1, 2, -1, 12}));
  Tensor y = X();
  // y[:, [2, 0], 1:3] = v[2, 2]  (broadcast over dim 0)
  set(y, Tup({All(), L({I(2), I(0)}), Sl(I(1), I(3), None())}), T(ft({-1, -2, -3, -4}, {2, 2})));
  std::vector<std::pair<int64_t, double>> e;
  for (int64_t i = 0; i < 2; ++i) {
    e.push_back({12 * i + 8 + 1, -1});
    e.push_back({12 * i + 8 + 2, -2});
    e.push_back({12 * i + 0 + 1, -3});
    e.push_back({12 * i + 0 + 2, -4});
  }
  EXPECT_TRUE(tensor_near(y, {2, 3, 4}, edited(24, e)));
}

TEST(IndexSetitem, KvCacheBlocksIntOffsets) {
  // state[blocks, 0, offsets, :] = vals on [B, H, S, D] = [3, 2, 5, 4]
  Tensor state = iota({3, 2, 5, 4});
  Tensor blocks = lt({2, 0}, {2}), offsets = lt({4, 1}, {2});
  Tensor vals = ft({-1, -2, -3, -4, -5, -6, -7, -8}, {2, 4});
  set(state, Tup({T(blocks), I(0), T(offsets), All()}), T(vals));
  std::vector<std::pair<int64_t, double>> e;
  for (int64_t d = 0; d < 4; ++d) {
    e.push_back({((2 * 2 + 0) * 5 + 4) * 4 + d, -(d + 1)});
    e.push_back({((0 * 2 + 0) * 5 + 1) * 4 + d, -(d + 5)});
  }
  EXPECT_TRUE(tensor_near(state, {3, 2, 5, 4}, edited(120, e)));
  EXPECT_TRUE(throws_with(
      [&] {
        set(state, Tup({T(blocks), I(0), T(lt({1, 7}, {2})), All()}), T(vals));
      },
      {"[setitem]", "index 7", "dimension 2", "size 5"}));
}

TEST(IndexSetitem, SeparatedAdvancedIndicesTakeFrontShapedValues) {
  Tensor x = X();
  // x[[1, 0], :, [3, 2]] is [2, 3]; write v[k, j]
  set(x, Tup({L({I(1), I(0)}), All(), L({I(3), I(2)})}), T(ft({-1, -2, -3, -4, -5, -6}, {2, 3})));
  std::vector<std::pair<int64_t, double>> e;
  for (int64_t j = 0; j < 3; ++j) {
    e.push_back({12 + 4 * j + 3, -(j + 1)});
    e.push_back({0 + 4 * j + 2, -(j + 4)});
  }
  EXPECT_TRUE(tensor_near(x, {2, 3, 4}, edited(24, e)));
  EXPECT_TRUE(throws_with(
      [&] {
        set(x, Tup({L({I(1), I(0)}), All(), L({I(3), I(2)})}), T(ft({1, 2}, {2, 1, 1})));
      },
      {"[setitem]", "[2,1,1]", "[2,3]"}));
}

TEST(IndexSetitem, BroadcastIndexTensors) {
  Tensor x = X();
  Tensor i = lt({0, 2}, {2, 1}), j = lt({1, 3}, {2});
  set(x, Tup({I(1), T(i), T(j)}), F(-1));  // x[1, i, j]: (0,1) (0,3) (2,1) (2,3)
  EXPECT_TRUE(tensor_near(x, {2, 3, 4}, edited(24, {{13, -1}, {15, -1}, {21, -1}, {23, -1}})));
}

TEST(IndexSetitem, ScalarsTakeSelfDTypeAndTensorsAreCast) {
  Tensor xi = Tensor::from_vector<int32_t>({1, 2, 3}, {3});
  set(xi, I(0), F(2.7));  // truncates like torch's scalar_tensor(2.7, int32)
  set(xi, L({I(2)}), F(-1.9));
  EXPECT_EQ(xi.dtype(), DType::kInt32);
  EXPECT_TRUE(tensor_near(xi, {3}, {2, 2, -1}));
  Tensor xf = iota({3});
  set(xf, Sl(I(1), None(), None()), T(dt({0.5, 0.25}, {2})));
  EXPECT_TRUE(tensor_near(xf, {3}, {0, 0.5, 0.25}));
  set(xf, T(lt({0}, {1})), T(lt({7}, {1})));
  EXPECT_TRUE(tensor_near(xf, {3}, {7, 0.5, 0.25}));
  Tensor xh = iota({3}, DType::kBFloat16);
  set(xh, I(1), F(1.5));
  EXPECT_TRUE(tensor_near(xh, {3}, {0, 1.5, 2}));
  EXPECT_TRUE(throws_with([&] { set(xf, I(0), L({I(1)})); }, {"[setitem]", "list"}));
}

TEST(IndexSetitem, OverlappingValueIsReadBeforeWritten) {
  Tensor x = iota({5});
  Tensor src = call_t("_operator.getitem", {T(x), Sl(None(), I(-1), None())});  // a view x[:-1]
  set(x, Sl(I(1), None(), None()), T(src));                                     // x[1:] = x[:-1]
  EXPECT_TRUE(tensor_near(x, {5}, {0, 0, 1, 2, 3}));
  Tensor y = iota({5});
  set(y, L({I(4), I(3), I(2), I(1), I(0)}), T(y));  // reverse through index_put
  EXPECT_TRUE(tensor_near(y, {5}, {4, 3, 2, 1, 0}));
}

TEST(IndexSetitem, NonContiguousSelfAndDTypes) {
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt64, DType::kInt8,
                   DType::kUInt8, DType::kBool}) {
    Tensor base = Tensor::zeros({3, 4}, dt);
    Tensor x = base.t();                         // [4, 3], strides [1, 4]
    set(x, Tup({L({I(3), I(0)}), I(1)}), I(1));  // x[[3, 0], 1] = 1 -> base[1][3], base[1][0]
    set(x, Tup({I(2), Sl(None(), None(), I(2))}), I(1));  // x[2, ::2] -> base[0][2], base[2][2]
    EXPECT_TRUE(tensor_near(base, {3, 4}, {0, 0, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0})) << dtype_name(dt);
  }
}

TEST(IndexSetitem, MethodSpellingAndEmpty) {
  Tensor x = iota({3});
  call("__setitem__", {T(x), I(1), F(-5)});
  EXPECT_TRUE(tensor_near(x, {3}, {0, -5, 2}));
  Tensor e = Tensor::empty({0, 2}, DType::kFloat32);
  set(e, T(Tensor::empty({0}, DType::kBool)), F(1));
  set(e, Tup({All(), I(1)}), F(1));
  EXPECT_EQ(e.numel(), 0);
  EXPECT_TRUE(throws_with([&] { set(x, I(3), F(0)); }, {"[setitem]", "index 3", "size 3"}));
}
