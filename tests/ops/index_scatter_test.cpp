// gather and the scatter family against reference loops (and, for scatter_reduce, the values
// torch gives for the same inputs, worked out by hand below).
#include "ops/index_test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

// Reference gather / scatter over 2-d tensors.
std::vector<double> ref_gather(const Tensor& self, int64_t dim, const Tensor& index) {
  std::vector<double> out;
  for (int64_t i = 0; i < index.shape()[0]; ++i)
    for (int64_t j = 0; j < index.shape()[1]; ++j) {
      int64_t v = static_cast<int64_t>(get(index, {i, j}));
      out.push_back(dim == 0 ? get(self.contiguous(), {v, j}) : get(self.contiguous(), {i, v}));
    }
  return out;
}

std::vector<double> ref_scatter(const Tensor& self, int64_t dim, const Tensor& index,
                                const Tensor& src, char reduce) {
  std::vector<double> out = self.contiguous().to_double_vector();
  const int64_t cols = self.shape()[1];
  for (int64_t i = 0; i < index.shape()[0]; ++i)
    for (int64_t j = 0; j < index.shape()[1]; ++j) {
      int64_t v = static_cast<int64_t>(get(index, {i, j}));
      double s = get(src.contiguous(), {i, j});
      double& d = out[dim == 0 ? v * cols + j : i * cols + v];
      d = reduce == '+' ? d + s : reduce == '*' ? d * s : s;
    }
  return out;
}

}  // namespace

TEST(IndexGather, MatchesReferenceOnBothDimsAndStrides) {
  Tensor self = iota({4, 3}).t();  // [3, 4], non-contiguous
  Tensor i0 = lt({2, 0, 1, 1, 0, 2, 2, 2}, {2, 4});
  Tensor r = call_t("torch.gather", {T(self), I(0), T(i0)});
  EXPECT_TRUE(tensor_near(r, {2, 4}, ref_gather(self, 0, i0)));
  Tensor i1 = Tensor::from_vector<int32_t>({3, 0, -1, 1, 1, 2}, {3, 2});
  r = call_t("aten.gather.default", {T(self), I(-1), T(i1)});
  Tensor i1l = lt({3, 0, 3, 1, 1, 2}, {3, 2});
  EXPECT_TRUE(tensor_near(r, {3, 2}, ref_gather(self, 1, i1l)));
  // index smaller than self off `dim` is fine; larger is an error naming both shapes
  EXPECT_TRUE(throws_with(
      [&] {
        call("torch.gather", {T(self), I(0), T(lt({0, 0, 0, 0, 0}, {1, 5}))});
      },
      {"[gather]", "[1,5]", "[3,4]"}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("torch.gather", {T(self), I(1), T(lt({4}, {1, 1}))});
      },
      {"[gather]", "index 4", "dimension 1", "size 4"}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("torch.gather", {T(self), I(1), T(lt({0}, {1}))});
      },
      {"[gather]", "as many dims"}));
  // every dtype moves bits unchanged
  for (DType dt : {DType::kFloat16, DType::kInt8, DType::kBool, DType::kFloat64}) {
    Tensor s = iota({2, 2}, dt);
    Tensor index = lt({1, 1, 0, 0}, {2, 2});
    EXPECT_TRUE(tensor_near(call_t("torch.gather", {T(s), I(1), T(index)}), {2, 2},
                            ref_gather(s, 1, index)))
        << dtype_name(dt);
  }
  EXPECT_EQ(
      call_t("torch.gather", {T(self), I(0), T(Tensor::empty({0, 4}, DType::kInt64))}).shape(),
      (Shape{0, 4}));
}

TEST(IndexScatter, SrcValueAndReduceMatchReference) {
  Tensor self = iota({3, 4});
  Tensor index = lt({2, 0, 1, 2, 0, 0, 1, 1}, {2, 4});
  Tensor src = ft({-1, -2, -3, -4, -5, -6, -7, -8, -9, -10}, {2, 5});  // larger than index
  Tensor r = call_t("torch.scatter", {T(self), I(0), T(index), T(src)});
  EXPECT_TRUE(tensor_near(r, {3, 4}, ref_scatter(self, 0, index, src, '=')));
  EXPECT_TRUE(tensor_near(self, {3, 4}, iota({3, 4}).to_double_vector()));  // untouched
  r = call_t("torch.scatter", {T(self), I(0), T(index), T(src)},
             {{"reduce", Value::string("add")}});
  EXPECT_TRUE(tensor_near(r, {3, 4}, ref_scatter(self, 0, index, src, '+')));
  r = call_t("torch.scatter", {T(self), I(0), T(index), T(src)},
             {{"reduce", Value::string("multiply")}});
  EXPECT_TRUE(tensor_near(r, {3, 4}, ref_scatter(self, 0, index, src, '*')));
  Tensor ones = Tensor::full({2, 4}, Scalar(2.5), DType::kFloat32);
  r = call_t("torch.scatter", {T(self), I(0), T(index), F(2.5)});  // a number binds as value
  EXPECT_TRUE(tensor_near(r, {3, 4}, ref_scatter(self, 0, index, ones, '=')));
  r = call_t("aten.scatter.value_reduce", {T(self), I(0), T(index), F(2.5)},
             {{"reduce", Value::string("add")}});
  EXPECT_TRUE(tensor_near(r, {3, 4}, ref_scatter(self, 0, index, ones, '+')));
  // scatter_add sums duplicates; dim 1, negative dim
  Tensor i1 = lt({0, 0, 3, 0, 1, 1, 1, 2, 2}, {3, 3});
  Tensor s1 = iota({3, 3});
  r = call_t("torch.scatter_add", {T(self), I(-1), T(i1), T(s1)});
  EXPECT_TRUE(tensor_near(r, {3, 4}, ref_scatter(self, 1, i1, s1, '+')));
}

TEST(IndexScatter, InPlaceFormsWriteSelf) {
  Tensor base = Tensor::zeros({4, 3}, DType::kFloat64);
  Tensor self = base.t();  // [3, 4] view
  Tensor index = lt({1, 3, 0}, {1, 3});
  Tensor out = call_t("scatter_", {T(self), I(1), T(index), T(dt({7, 8, 9}, {1, 3}))});
  EXPECT_TRUE(out.same_view(self));
  // self[0][1] = 7, self[0][3] = 8, self[0][0] = 9 -> base[1][0], base[3][0], base[0][0]
  EXPECT_TRUE(tensor_near(base, {4, 3}, {9, 0, 0, 7, 0, 0, 0, 0, 0, 8, 0, 0}));
  call("scatter_add_", {T(self), I(1), T(index), T(dt({1, 1, 1}, {1, 3}))});
  EXPECT_TRUE(tensor_near(base, {4, 3}, {10, 0, 0, 8, 0, 0, 0, 0, 0, 9, 0, 0}));
  call("scatter_", {T(self), I(0), T(lt({2}, {1, 1})), F(-1)});
  EXPECT_TRUE(tensor_near(base, {4, 3}, {10, 0, -1, 8, 0, 0, 0, 0, 0, 9, 0, 0}));
  call("aten.scatter_reduce_.two",
       {T(self), I(1), T(lt({0, 0}, {1, 2})), T(dt({5, 3}, {1, 2})), Value::string("amax")});
  EXPECT_TRUE(tensor_near(base, {4, 3}, {10, 0, -1, 8, 0, 0, 0, 0, 0, 9, 0, 0}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("scatter_", {T(self), I(1), T(lt({4}, {1, 1})), F(0)});
      },
      {"[scatter_]", "index 4", "dimension 1", "size 4"}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("scatter_", {T(self), I(0), T(lt({0, 0}, {1, 2})), T(dt({1}, {1, 1}))});
      },
      {"[scatter_]", "[1,2]", "src [1,1]"}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("torch.scatter", {T(self), I(0), T(lt({0}, {1, 1})), T(dt({1}, {1, 1}))},
             {{"reduce", Value::string("max")}});
      },
      {"[scatter]", "add or multiply"}));
}

TEST(IndexScatterReduce, AllReductionsWithAndWithoutSelf) {
  // self = [[1,2,3],[4,5,6]], dim 1, index [[0,0,1],[1,0,1]], src [[10,20,30],[40,50,60]]
  Tensor self = ft({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor index = lt({0, 0, 1, 1, 0, 1}, {2, 3});
  Tensor src = ft({10, 20, 30, 40, 50, 60}, {2, 3});
  struct Case {
    const char* reduce;
    bool include_self;
    std::vector<double> want;
  };
  const std::vector<Case> cases = {
      {"sum", true, {31, 32, 3, 54, 105, 6}},       {"sum", false, {30, 30, 3, 50, 100, 6}},
      {"prod", true, {200, 60, 3, 200, 12000, 6}},  {"prod", false, {200, 30, 3, 50, 2400, 6}},
      {"mean", true, {31.0 / 3, 16, 3, 27, 35, 6}}, {"mean", false, {15, 30, 3, 50, 50, 6}},
      {"amax", true, {20, 30, 3, 50, 60, 6}},       {"amax", false, {20, 30, 3, 50, 60, 6}},
      {"amin", true, {1, 2, 3, 4, 5, 6}},           {"amin", false, {10, 30, 3, 50, 40, 6}},
  };
  for (const Case& c : cases) {
    Tensor r =
        call_t("torch.scatter_reduce", {T(self), I(1), T(index), T(src), Value::string(c.reduce)},
               {{"include_self", B(c.include_self)}});
    EXPECT_TRUE(tensor_near(r, {2, 3}, c.want, 1e-6)) << c.reduce << " " << c.include_self;
  }
  // integer mean floors: (1 + 10 + 20) / 3 = 10, (1 - 31 + 20) / 3 = -4
  Tensor si = lt({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor r = call_t(
      "torch.scatter_reduce",
      {T(si), I(1), T(index), T(lt({10, 20, 31, 40, 50, 61}, {2, 3})), Value::string("mean")});
  EXPECT_TRUE(tensor_near(r, {2, 3}, {10, 16, 3, 27, 35, 6}));
  r = call_t(
      "torch.scatter_reduce",
      {T(si), I(1), T(index), T(lt({-31, 20, 31, 40, 50, 61}, {2, 3})), Value::string("mean")});
  EXPECT_EQ(get(r, {0, 0}), -4);
  // NaN propagates through amax
  Tensor n = ft({0, 0}, {2});
  r = call_t("torch.scatter_reduce", {T(n), I(0), T(lt({0, 0}, {2})),
                                      T(ft({std::nanf(""), 1}, {2})), Value::string("amax")});
  EXPECT_TRUE(std::isnan(get(r, {0})));
  EXPECT_TRUE(throws_with(
      [&] {
        call("torch.scatter_reduce", {T(self), I(1), T(index), T(src), Value::string("max")});
      },
      {"[scatter_reduce]", "sum, prod, mean, amax, amin"}));
}

TEST(IndexScatter, HalfAndIntegerDTypes) {
  for (DType dt :
       {DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kUInt8, DType::kInt16}) {
    Tensor self = iota({2, 3}, dt);
    Tensor r =
        call_t("torch.scatter_add", {T(self), I(0), T(lt({1, 1, 0}, {1, 3})), T(iota({1, 3}, dt))});
    EXPECT_EQ(r.dtype(), dt);
    EXPECT_TRUE(tensor_near(r, {2, 3}, {0, 1, 4, 3, 5, 5})) << dtype_name(dt);
  }
}
