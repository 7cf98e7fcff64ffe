// The CPU kernels called directly, as the engine does: strided outputs, outputs that are the
// very view of an input, and every loop shape (flat, unit-stride, broadcast inner, general).
#include <gtest/gtest.h>

#include "kernels/cpu/elementwise.h"
#include "ops/elementwise_test_util.h"

namespace inplace::testing {
namespace {

using cpu::BinaryOp;
using cpu::Operand;

TEST(ElementwiseKernel, BinaryIntoStridedOutput) {
  Tensor a = sample({3, 4}, DType::kFloat32, 81), b = sample({4}, DType::kFloat32, 82);
  Tensor storage = Tensor::full({4, 3}, Scalar(-100.0), DType::kFloat32);
  Tensor out = storage.t();  // [3,4] with strides (1,3)
  cpu::binary(BinaryOp::kSub, out, a, b, Scalar(2), "sub");
  EXPECT_TRUE(tensor_near(out, {3, 4},
                          ref_binary(a, b, {3, 4}, [](double x, double y) { return x - 2 * y; })));
  // an output with gaps: only every other column is written
  Tensor wide = Tensor::full({3, 8}, Scalar(-100.0), DType::kFloat32);
  cpu::binary(BinaryOp::kMul, wide.slice(1, 0, 8, 2), a, Scalar(2.0), Scalar(1), "mul");
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 8; ++j)
      EXPECT_EQ(wide.at(i * 8 + j), j % 2 ? -100.0 : 2 * a.at(i * 4 + j / 2)) << i << "," << j;
}

TEST(ElementwiseKernel, BinaryEveryLoopShape) {
  // inner broadcast on either side ([N,1] vs [1,C]), scalar on either side, both strided
  Tensor col = sample({5, 1}, DType::kFloat64, 83), row = sample({1, 6}, DType::kFloat64, 84);
  Tensor out = Tensor::empty({5, 6}, DType::kFloat64);
  auto sub = [](double x, double y) { return x - y; };
  cpu::binary(BinaryOp::kSub, out, col, row, Scalar(1), "sub");
  EXPECT_TRUE(tensor_near(out, {5, 6}, ref_binary(col, row, {5, 6}, sub)));
  cpu::binary(BinaryOp::kSub, out, row, col, Scalar(1), "sub");
  EXPECT_TRUE(tensor_near(out, {5, 6}, ref_binary(row, col, {5, 6}, sub)));
  // one tensor operand broadcast along the inner dim: each row is one value
  cpu::binary(BinaryOp::kMul, out, col, Scalar(-2.0), Scalar(1), "mul");
  EXPECT_TRUE(tensor_near(out, {5, 6}, ref_binary(col, row, {5, 6}, [](double x, double) {
                            return -2 * x;
                          })));
  Tensor copied = Tensor::empty({5, 6}, DType::kInt32);
  cpu::copy_cast(copied, col.to(DType::kInt32));
  EXPECT_TRUE(tensor_near(copied, {5, 6}, ref_binary(col, row, {5, 6}, [](double x, double) {
                            return std::trunc(x);
                          })));
  Tensor m = sample({6, 5}, DType::kFloat64, 85).t();
  cpu::binary(BinaryOp::kSub, out, Scalar(1.5), m, Scalar(1), "sub");
  EXPECT_TRUE(tensor_near(out, {5, 6}, ref_unary(m, [](double v) { return 1.5 - v; })));
  cpu::binary(BinaryOp::kSub, out, m, Scalar(1.5), Scalar(1), "sub");
  EXPECT_TRUE(tensor_near(out, {5, 6}, ref_unary(m, [](double v) { return v - 1.5; })));
  Tensor one = Tensor::scalar(Scalar(4.0), DType::kFloat64);
  cpu::binary(BinaryOp::kSub, out, one, Scalar(1.0), Scalar(1), "sub");  // fills out
  EXPECT_TRUE(tensor_near(out, {5, 6}, std::vector<double>(30, 3.0)));
  cpu::binary(BinaryOp::kMaximum, out, m, m.slice(1, 0, 6, 1), Scalar(1), "maximum");
  EXPECT_TRUE(tensor_near(out, {5, 6}, m.to_double_vector()));
}

TEST(ElementwiseKernel, OutputIsTheInputView) {
  Tensor x = sample({4, 4}, DType::kFloat32, 86);
  Tensor xt = x.t();
  std::vector<double> before = xt.to_double_vector();
  cpu::binary(BinaryOp::kAdd, xt, xt, Scalar(1.0), Scalar(1), "add");
  std::vector<double> want = before;
  for (double& v : want) v += 1;
  EXPECT_TRUE(tensor_near(xt, {4, 4}, want));
  cpu::unary(cpu::UnaryOp::kNeg, x, x);
  for (double& v : want) v = -v;
  EXPECT_TRUE(tensor_near(xt, {4, 4}, want));
}

TEST(ElementwiseKernel, UnaryWhereClampCopyIntoStridedOutput) {
  Tensor in = sample({3, 4}, DType::kInt32, 87);
  Tensor storage = Tensor::zeros({4, 3}, DType::kFloat32);
  cpu::unary(cpu::UnaryOp::kAbs, storage.t(), in);  // converts int32 -> float32 first
  EXPECT_TRUE(
      tensor_near(storage.t(), {3, 4}, ref_unary(in, [](double v) { return v < 0 ? -v : v; })));

  Tensor cond = sample({4}, DType::kBool, 88);
  Tensor w = Tensor::zeros({4, 3}, DType::kInt64);
  cpu::where(w.t(), cond, Operand(in), Operand(Scalar(-1)));
  for (int64_t k = 0; k < 12; ++k) EXPECT_EQ(w.t().at(k), cond.at(k % 4) != 0 ? in.at(k) : -1) << k;

  Tensor c = Tensor::zeros({4, 3}, DType::kInt32);
  cpu::clamp(c.t(), Operand(in), Operand(Scalar(-2)), std::nullopt);
  EXPECT_TRUE(tensor_near(c.t(), {3, 4}, ref_unary(in, [](double v) { return v < -2 ? -2 : v; })));

  Tensor h = Tensor::zeros({4, 3}, DType::kFloat16);
  cpu::copy_cast(h.t(), in);
  EXPECT_TRUE(tensor_near(h.t(), {3, 4}, in.to_double_vector()));
  Tensor same = Tensor::zeros({4, 3}, DType::kInt32);
  cpu::copy_cast(same.t(), in);  // same dtype, strided: moves bits
  EXPECT_TRUE(tensor_near(same.t(), {3, 4}, in.to_double_vector()));
  cpu::fill(same.slice(0, 1, 4, 2), Scalar(9));
  EXPECT_EQ(same.at(3), 9);
  EXPECT_EQ(same.at(9), 9);
  EXPECT_EQ(same.at(0), in.at(0));
}

TEST(ElementwiseKernel, CompareConvertsToComputeDType) {
  Tensor i = lt({1, 2, 3}, {3});
  Tensor out = Tensor::empty({3}, DType::kBool);
  cpu::compare(cpu::CompareOp::kGt, out, i, Scalar(1.5), DType::kFloat32);
  EXPECT_TRUE(tensor_near(out, {3}, {0, 1, 1}));
  cpu::compare(cpu::CompareOp::kGe, out, Scalar(2), i, DType::kInt64);
  EXPECT_TRUE(tensor_near(out, {3}, {1, 1, 0}));
  cpu::compare(cpu::CompareOp::kXor, out, i, bt({true, false, false}, {3}), DType::kBool);
  EXPECT_TRUE(tensor_near(out, {3}, {0, 1, 1}));
}

}  // namespace
}  // namespace inplace::testing
