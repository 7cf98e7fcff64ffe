// nonzero, masked_select, masked_scatter(_) and embedding (aten and torch.nn.functional).
#include "ops/index_test_util.h"

using namespace inplace;
using namespace inplace::testing;

TEST(IndexNonzero, CoordinatesInRowMajorOrder) {
  Tensor x = ft({0, 1.5, 0, -2, 0, 0, 3, 0}, {2, 4});
  Tensor r = call_t("torch.nonzero", {T(x)});
  EXPECT_EQ(r.dtype(), DType::kInt64);
  EXPECT_TRUE(tensor_near(r, {3, 2}, {0, 1, 0, 3, 1, 2}));
  EXPECT_TRUE(tensor_near(call_t("torch.nonzero", {T(x.t())}), {3, 2}, {1, 0, 2, 1, 3, 0}));
  EXPECT_TRUE(tensor_near(call_t("aten.argwhere", {T(bt({false, true}, {2}))}), {1, 1}, {1}));
  EXPECT_EQ(call_t("torch.nonzero", {T(Tensor::scalar(Scalar(2), DType::kInt32))}).shape(),
            (Shape{1, 0}));
  EXPECT_EQ(call_t("torch.nonzero", {T(Tensor::zeros({3, 0}, DType::kFloat32))}).shape(),
            (Shape{0, 2}));
  Tensor h = Tensor::full({2}, Scalar(0.5), DType::kBFloat16);
  EXPECT_EQ(call_t("torch.nonzero", {T(h)}).shape(), (Shape{2, 1}));
  const OpDef* op = Registry::get().find("nonzero");
  EXPECT_TRUE(op->dynamic_shape);
}

TEST(IndexMaskedSelect, BroadcastsSelfAndMask) {
  Tensor x = iota({2, 3});
  Tensor r = call_t("torch.masked_select", {T(x), T(bt({true, false, true}, {3}))});
  EXPECT_TRUE(tensor_near(r, {4}, {0, 2, 3, 5}));
  r = call_t("torch.masked_select",
             {T(ft({7, 8}, {2, 1})), T(bt({true, false, true, true, true, false}, {2, 3}))});
  EXPECT_TRUE(tensor_near(r, {4}, {7, 7, 8, 8}));
  Tensor u8 = Tensor::from_vector<uint8_t>({0, 2, 0}, {3});
  EXPECT_TRUE(tensor_near(call_t("torch.masked_select", {T(x), T(u8)}), {2}, {1, 4}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("torch.masked_select", {T(x), T(bt({true, false}, {2}))});
      },
      {"[masked_select]", "[2,3]", "[2]"}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("torch.masked_select", {T(x), T(ft({1, 0, 1}, {3}))});
      },
      {"[masked_select]", "bool mask", "float32"}));
  EXPECT_TRUE(Registry::get().find("masked_select")->dynamic_shape);
}

TEST(IndexMaskedScatter, SourceReadInOrder) {
  Tensor x = iota({2, 3});
  Tensor mask = bt({false, true, true, true, false, true}, {2, 3});
  Tensor src = ft({-1, -2, -3, -4, -5, -6}, {2, 3});  // only the first 4 are used
  Tensor r = call_t("torch.masked_scatter", {T(x), T(mask), T(src)});
  EXPECT_TRUE(tensor_near(r, {2, 3}, {0, -1, -2, -3, 4, -4}));
  EXPECT_TRUE(tensor_near(x, {2, 3}, {0, 1, 2, 3, 4, 5}));
  // the functional form broadcasts self with the mask
  r = call_t("torch.masked_scatter", {T(ft({1, 2, 3}, {3})), T(bt({true, false}, {2, 1})), T(src)});
  EXPECT_TRUE(tensor_near(r, {2, 3}, {-1, -2, -3, 1, 2, 3}));
  // in place through a transposed view: source is read in the view's row-major order (torch
  // enforces linear iteration here; 1.x releases followed memory order instead)
  Tensor base = Tensor::zeros({3, 2}, DType::kFloat32);
  Tensor v = base.t();  // [2, 3]
  call("masked_scatter_", {T(v), T(bt({true, false, true}, {3})), T(ft({1, 2, 3, 4}, {4}))});
  // v[0][0]=1, v[0][2]=2, v[1][0]=3, v[1][2]=4 -> base[0][0], base[2][0], base[0][1], base[2][1]
  EXPECT_TRUE(tensor_near(base, {3, 2}, {1, 3, 0, 0, 2, 4}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("masked_scatter_", {T(v), T(bt({true, true, true}, {3})), T(ft({1, 2}, {2}))});
      },
      {"[masked_scatter_]", "selects 6", "has only 2"}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("masked_scatter_", {T(v), T(bt({true, true}, {2, 1, 1})), T(ft({1}, {1}))});
      },
      {"[masked_scatter_]", "[2,1,1]", "[2,3]"}));
}

TEST(IndexEmbedding, AtenAndFunctionalArgumentOrders) {
  Tensor weight = iota({5, 3});
  Tensor ids = lt({4, 0, 4, 2}, {2, 2});
  std::vector<double> want = {12, 13, 14, 0, 1, 2, 12, 13, 14, 6, 7, 8};
  EXPECT_TRUE(tensor_near(call_t("aten.embedding.default", {T(weight), T(ids)}), {2, 2, 3}, want));
  EXPECT_TRUE(tensor_near(call_t("torch.embedding", {T(weight), T(ids)}), {2, 2, 3}, want));
  EXPECT_TRUE(
      tensor_near(call_t("torch.nn.functional.embedding", {T(ids), T(weight)}), {2, 2, 3}, want));
  EXPECT_TRUE(tensor_near(
      call_t("torch.nn.functional.embedding", {T(ids), T(weight)}, {{"padding_idx", I(0)}}),
      {2, 2, 3}, want));
  Tensor i32 = Tensor::from_vector<int32_t>({1}, {});
  EXPECT_TRUE(
      tensor_near(call_t("torch.nn.functional.embedding", {T(i32), T(weight)}), {3}, {3, 4, 5}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("torch.nn.functional.embedding", {T(lt({5}, {1})), T(weight)});
      },
      {"[embedding]", "index 5", "dimension 0", "size 5"}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("aten.embedding", {T(iota({5})), T(ids)});
      },
      {"[embedding]", "2-D"}));
  EXPECT_TRUE(throws_with(
      [&] {
        call("torch.nn.functional.embedding", {T(ids), T(weight)}, {{"max_norm", F(1.0)}});
      },
      {"[embedding]", "max_norm"}));
}
