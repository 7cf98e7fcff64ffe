// aten.index / index_put(_) and the one-dim index ops (index_select, index_copy, index_add,
// index_fill), each against a reference loop written here.
#include "ops/index_test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

Tensor idx(std::vector<int64_t> v) {
  return lt(v, {static_cast<int64_t>(v.size())});
}

// Reference: out = self with row `index[i]` of `dim` replaced (copy) or increased (add) by
// alpha * source's row i, in order.
std::vector<double> ref_dim_put(const Tensor& self, int64_t dim, const std::vector<int64_t>& index,
                                const Tensor& source, bool add, double alpha) {
  std::vector<double> out = self.contiguous().to_double_vector();
  const Shape& s = self.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= s[d];
  for (int64_t d = dim + 1; d < self.dim(); ++d) inner *= s[d];
  const int64_t n = static_cast<int64_t>(index.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < n; ++i) {
      int64_t row = index[i] < 0 ? index[i] + s[dim] : index[i];
      for (int64_t k = 0; k < inner; ++k) {
        double v = source.at((o * n + i) * inner + k);
        double& dst = out[(o * s[dim] + row) * inner + k];
        dst = add ? dst + alpha * v : v;
      }
    }
  return out;
}

}  // namespace

TEST(IndexPut, IndexTensorMatchesGetitemPlacement) {
  Tensor x = iota({2, 3, 4});
  // index(x, [None, [2, 0]]) == x[:, [2, 0]]
  Tensor r = call_t("aten.index.Tensor", {T(x), L({None(), T(idx({2, 0}))})});
  EXPECT_TRUE(
      tensor_near(r, {2, 2, 4}, {8, 9, 10, 11, 0, 1, 2, 3, 20, 21, 22, 23, 12, 13, 14, 15}));
  // separated: index(x, [[1, 0], None, [3, 2]]) -> [2, 3]
  r = call_t("torch.ops.aten.index.Tensor", {T(x), L({T(idx({1, 0})), None(), T(idx({3, 2}))})});
  EXPECT_TRUE(tensor_near(r, {2, 3}, {15, 19, 23, 2, 6, 10}));
  // a bool mask inside the list expands to its nonzero() columns
  r = call_t("aten.index.Tensor", {T(x), L({None(), T(bt({false, true, true}, {3}))})});
  EXPECT_TRUE(
      tensor_near(r, {2, 2, 4}, {4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("aten.index.Tensor", {T(x), L({T(idx({2}))})});
      },
      {"[index]", "index 2", "dimension 0", "size 2"}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("aten.index.Tensor", {T(x), L({None(), None(), None(), T(idx({0}))})});
      },
      {"[index]", "too many indices"}));
}

TEST(IndexPut, InferWorksOnMetasExceptMasks) {
  const OpDef* op = Registry::get().find("index.Tensor");
  ASSERT_NE(op, nullptr);
  ASSERT_TRUE(op->infer);
  Args a = {T(Tensor::meta({4, 5, 6}, DType::kFloat32)),
            L({None(), T(Tensor::meta({2, 3}, DType::kInt64))})};
  auto m = op->infer(a);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].shape(), (Shape{4, 2, 3, 6}));
  Args b = {T(Tensor::meta({4, 5}, DType::kFloat32)), L({T(Tensor::meta({4}, DType::kBool))})};
  try {
    op->infer(b);
    ADD_FAILURE() << "a meta mask must not infer";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  }
}

TEST(IndexPut, AccumulateSumsDuplicatesAndPlainPutLastWins) {
  Tensor x = Tensor::zeros({5}, DType::kFloat32);
  Tensor vals = ft({1, 2, 3, 4}, {4});
  Tensor r = call_t("aten.index_put.default", {T(x), L({T(idx({0, 0, 2, -5}))}), T(vals), B(true)});
  EXPECT_TRUE(tensor_near(r, {5}, {7, 0, 3, 0, 0}));
  EXPECT_TRUE(tensor_near(x, {5}, {0, 0, 0, 0, 0}));  // functional: self untouched
  r = call_t("aten.index_put", {T(x), L({T(idx({0, 0, 2}))}), T(ft({1, 2, 3}, {3}))});
  EXPECT_TRUE(tensor_near(r, {5}, {2, 0, 3, 0, 0}));
  // in place, 2-d, with an int32 and an int64 index broadcast together
  Tensor y = Tensor::zeros({2, 3}, DType::kInt64);
  Tensor rows = Tensor::from_vector<int32_t>({1, 1}, {2});
  Tensor out =
      call_t("aten.index_put_", {T(y), L({T(rows), T(idx({2, 2}))}), T(lt({5}, {})), B(true)});
  EXPECT_TRUE(out.same_view(y));
  EXPECT_TRUE(tensor_near(y, {2, 3}, {0, 0, 0, 0, 0, 10}));
  // accumulate in half precision goes through float
  Tensor h = Tensor::zeros({2}, DType::kFloat16);
  call("aten.index_put_",
       {T(h), L({T(idx({1, 1, 1}))}), T(Tensor::full({3}, Scalar(0.5), DType::kFloat16)), B(true)});
  EXPECT_TRUE(tensor_near(h, {2}, {0, 1.5}));
  // bool accumulate is logical or
  Tensor b = bt({false, false}, {2});
  call("aten.index_put_", {T(b), L({T(idx({1, 1}))}), T(bt({true, false}, {2})), B(true)});
  EXPECT_TRUE(tensor_near(b, {2}, {0, 1}));
}

TEST(IndexPut, MaskIndexAndValueBroadcast) {
  Tensor x = iota({2, 3});
  call("aten._index_put_impl_", {T(x), L({T(bt({true, false, true, false, false, true}, {2, 3}))}),
                                 T(ft({-1, -2, -3}, {3}))});
  EXPECT_TRUE(tensor_near(x, {2, 3}, {-1, 1, -2, 3, 4, -3}));
  Tensor y = iota({2, 3});
  call("aten.index_put_", {T(y), L({None(), T(idx({0, 2}))}), T(ft({7, 8}, {2}))});
  EXPECT_TRUE(tensor_near(y, {2, 3}, {7, 1, 8, 7, 4, 8}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("aten.index_put_", {T(y), L({None(), T(idx({0, 2}))}), T(ft({1, 2, 3}, {3}))});
      },
      {"[index_put_]", "value tensor of shape [3]", "indexing result of shape [2,2]"}));
  const OpDef* op = Registry::get().find("index_put");
  EXPECT_TRUE(throws_with(
      [&] {
        op->infer({T(Tensor::meta({2, 3}, DType::kFloat32)),
                   L({T(Tensor::meta({4}, DType::kInt64))}), T(Tensor::meta({2}, DType::kFloat32)),
                   B(false)});
      },
      {"[index_put]", "value tensor of shape [2]", "[4,3]"}));
}

TEST(IndexSelect, MatchesReferenceOnEveryDimAndDType) {
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kInt32, DType::kUInt8,
                   DType::kBool}) {
    Tensor x = iota({3, 4, 2}, dt).permute({1, 0, 2});  // [4, 3, 2], non-contiguous
    for (int64_t dim : {0, 1, -1}) {
      int64_t d = dim < 0 ? dim + 3 : dim;
      std::vector<int64_t> index = {1, 0, 1, 1};
      Tensor r = call_t("torch.index_select", {T(x), I(dim), T(idx(index))});
      Shape shape = x.shape();
      shape[d] = 4;
      ASSERT_EQ(r.shape(), shape);
      for (int64_t a = 0; a < shape[0]; ++a)
        for (int64_t b = 0; b < shape[1]; ++b)
          for (int64_t c = 0; c < shape[2]; ++c) {
            std::vector<int64_t> src = {a, b, c};
            int64_t i = index[src[d]];
            src[d] = i;
            EXPECT_EQ(get(r, {a, b, c}), get(x.contiguous(), src)) << dtype_name(dt);
          }
    }
  }
  Tensor x = iota({3, 2});
  EXPECT_TRUE(throws_with(
      [&] {
        call("aten.index_select", {T(x), I(0), T(idx({3}))});
      },
      {"[index_select]", "index 3", "dimension 0", "size 3"}));
  // A negative index is refused, as PyTorch refuses it (index_select does not wrap).
  EXPECT_TRUE(throws_with(
      [&] {
        call("aten.index_select", {T(x), I(0), T(idx({-1}))});
      },
      {"[index_select]", "index -1", "dimension 0", "size 3"}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("aten.index_select", {T(x), I(0), T(lt({0, 1}, {1, 2}))});
      },
      {"[index_select]", "at most one dimension"}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("aten.index_select", {T(x), I(0), T(ft({0}, {1}))});
      },
      {"[index_select]", "int64 or int32"}));
  EXPECT_TRUE(
      tensor_near(call_t("aten.index_select", {T(x), I(1), T(lt({1}, {}))}), {3, 1}, {1, 3, 5}));
}

TEST(IndexCopyAdd, MatchReferenceLoops) {
  Tensor self = iota({3, 4, 2});
  Tensor source = ft({-1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12}, {3, 2, 2});
  std::vector<int64_t> index = {3, 0};
  Tensor r = call_t("aten.index_copy", {T(self), I(1), T(idx(index)), T(source)});
  EXPECT_TRUE(tensor_near(r, {3, 4, 2}, ref_dim_put(self, 1, index, source, false, 1)));
  EXPECT_TRUE(tensor_near(self, {3, 4, 2}, iota({3, 4, 2}).to_double_vector()));
  // duplicates add up in index_add; alpha scales
  std::vector<int64_t> dup = {1, 1};
  r = call_t("aten.index_add", {T(self), I(-2), T(idx(dup)), T(source)}, {{"alpha", F(0.5)}});
  EXPECT_TRUE(tensor_near(r, {3, 4, 2}, ref_dim_put(self, 1, dup, source, true, 0.5)));
  // in place on a non-contiguous view writes through to the base
  Tensor base = Tensor::zeros({4, 3}, DType::kFloat64);
  Tensor v = base.t();  // [3, 4]
  call("index_copy_", {T(v), I(1), T(idx({2})), T(dt({1, 2, 3}, {3, 1}))});
  EXPECT_TRUE(tensor_near(base, {4, 3}, {0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0}));
  call("index_add_", {T(v), I(0), T(idx({0, 0})), T(dt({1, 1, 1, 1, 1, 1, 1, 1}, {2, 4}))},
       {{"alpha", I(2)}});
  EXPECT_TRUE(tensor_near(base, {4, 3}, {4, 0, 0, 4, 0, 0, 5, 2, 3, 4, 0, 0}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("aten.index_copy",
             {T(self), I(1), T(idx(index)), T(Tensor::zeros({3, 3, 2}, DType::kFloat32))});
      },
      {"[index_copy]", "source of shape [3,3,2]", "[3,2,2]", "[3,4,2]"}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("aten.index_copy", {T(self), I(1), T(idx({4, 0})), T(source)});
      },
      {"[index_copy]", "index 4", "dimension 1", "size 4"}));
}

TEST(IndexFill, ScalarAndTensorValue) {
  Tensor x = iota({2, 3});
  Tensor r = call_t("aten.index_fill.int_Scalar", {T(x), I(1), T(idx({0, 2})), F(-1)});
  EXPECT_TRUE(tensor_near(r, {2, 3}, {-1, 1, -1, -1, 4, -1}));
  call("index_fill_", {T(x), I(0), T(idx({1})), T(ft({9}, {}))});
  EXPECT_TRUE(tensor_near(x, {2, 3}, {0, 1, 2, 9, 9, 9}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("index_fill_", {T(x), I(0), T(idx({1})), T(ft({9, 9}, {2}))});
      },
      {"[index_fill_]", "0-dimensional"}));
}

TEST(IndexPut, EmptyIndexAndEmptySelf) {
  Tensor x = iota({3});
  Tensor r = call_t("aten.index_put", {T(x), L({T(idx({}))}), T(ft({1}, {1}))});
  EXPECT_TRUE(tensor_near(r, {3}, {0, 1, 2}));
  Tensor e = Tensor::empty({0, 2}, DType::kFloat32);
  EXPECT_EQ(call_t("aten.index.Tensor", {T(e), L({None(), T(idx({1, 1, 0}))})}).shape(),
            (Shape{0, 3}));
  EXPECT_EQ(call_t("aten.index_select", {T(e), I(0), T(idx({}))}).shape(), (Shape{0, 2}));
}
