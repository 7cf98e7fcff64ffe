// baddbmm / addbmm (and their in-place forms) against float64 loops written here: beta/alpha,
// self broadcasting, beta=0 ignoring NaN, strided batches, empty batches, dtypes, errors, and
// the compiled engine's out path.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/differential.h"
#include "elementwise_test_util.h"
#include "ir/builder.h"

namespace inplace::testing {
namespace {

// out[b, i, j] = beta * self + alpha * sum_k x[b, i, k] y[b, k, j] (summed over b if `summed`).
std::vector<double> ref_batch(const Tensor& self, const Tensor& x, const Tensor& y, double beta,
                              double alpha, bool summed) {
  const int64_t nb = x.size(0), n = x.size(1), kk = x.size(2), p = y.size(2);
  const Shape out = summed ? Shape{n, p} : Shape{nb, n, p};
  std::vector<double> r(static_cast<size_t>(numel_of(out)), 0);
  const Tensor xc = x.contiguous(), yc = y.contiguous();
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < p; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < kk; ++k)
          acc += xc.at((b * n + i) * kk + k) * yc.at((b * kk + k) * p + j);
        r[static_cast<size_t>(summed ? i * p + j : (b * n + i) * p + j)] += alpha * acc;
      }
  for (int64_t f = 0; f < numel_of(out); ++f)
    if (beta != 0) r[f] += beta * self.at(broadcast_index(self, out, f));
  return r;
}

TEST(MatrixBatchOps, BaddbmmValues) {
  for (DType dt :
       {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt64, DType::kInt32}) {
    const Tensor x = sample({3, 2, 4}, dt, 1), y = sample({3, 4, 5}, dt, 2);
    for (const Shape& ss : {Shape{3, 2, 5}, Shape{2, 5}, Shape{1, 1, 5}, Shape{1}}) {
      const Tensor self = sample(ss, dt, 3);
      const bool fl = is_floating(dt);
      const Value beta = fl ? F(0.5) : I(2), alpha = fl ? F(-1.5) : I(3);
      SCOPED_TRACE(str_cat(dtype_name(dt), " self ", shape_str(ss)));
      const Tensor r =
          call_t("torch.baddbmm", {T(self), T(x), T(y)}, {{"beta", beta}, {"alpha", alpha}});
      EXPECT_EQ(r.dtype(), dt);
      EXPECT_TRUE(tensor_near(
          r, {3, 2, 5}, ref_batch(self, x, y, beta.as_double("b"), alpha.as_double("a"), false),
          dt == DType::kFloat16 ? 4e-3 : 1e-6));
      const Tensor s = call_t("addbmm", {T(self.dim() == 3 ? self.select(0, 0) : self), T(x), T(y)},
                              {{"beta", beta}, {"alpha", alpha}});
      const Tensor self2 = self.dim() == 3 ? self.select(0, 0) : self;
      EXPECT_TRUE(tensor_near(
          s, {2, 5}, ref_batch(self2, x, y, beta.as_double("b"), alpha.as_double("a"), true),
          dt == DType::kFloat16 ? 1e-2 : 1e-6));
    }
  }
}

TEST(MatrixBatchOps, StridedBatchesAndDefaults) {
  const Tensor xb = sample({3, 4, 2}, DType::kFloat32, 4),
               yb = sample({5, 4, 3}, DType::kFloat32, 5);
  const Tensor x = xb.transpose(1, 2);     // [3, 2, 4], transposed matrices
  const Tensor y = yb.permute({2, 1, 0});  // [3, 4, 5], batch stride 1
  const Tensor self = sample({5, 2}, DType::kFloat32, 6).t().unsqueeze(0);  // [1, 2, 5] strided
  EXPECT_TRUE(tensor_near(call_t("baddbmm", {T(self.expand({3, 2, 5})), T(x), T(y)}), {3, 2, 5},
                          ref_batch(self, x, y, 1, 1, false), 1e-6));
  EXPECT_TRUE(tensor_near(call_t("aten.addbmm.default", {T(self.squeeze({0})), T(x), T(y)}), {2, 5},
                          ref_batch(self.squeeze({0}), x, y, 1, 1, true), 1e-6));
}

TEST(MatrixBatchOps, BetaZeroIgnoresSelf) {
  const Tensor x = sample({2, 3, 4}, DType::kFloat32, 7), y = sample({2, 4, 2}, DType::kFloat32, 8);
  const Tensor self = Tensor::full({2, 3, 2}, Scalar(NAN), DType::kFloat32);
  Tensor r = call_t("baddbmm", {T(self), T(x), T(y)}, {{"beta", I(0)}});
  EXPECT_TRUE(tensor_near(r, {2, 3, 2}, ref_batch(self, x, y, 0, 1, false), 1e-6));
  r = call_t("addbmm", {T(self.select(0, 0)), T(x), T(y)}, {{"beta", F(0.0)}, {"alpha", F(2.0)}});
  EXPECT_TRUE(tensor_near(r, {3, 2}, ref_batch(self, x, y, 0, 2, true), 1e-6));
  // With beta != 0 NaN propagates.
  r = call_t("baddbmm", {T(self), T(x), T(y)});
  EXPECT_TRUE(std::isnan(r.at(0)));
}

TEST(MatrixBatchOps, EmptyBatchesAndInner) {
  const Tensor self = ft({1, 2, 3, 4}, {2, 2});
  // No batches: addbmm is beta * self.
  Tensor r = call_t("addbmm",
                    {T(self), T(Tensor::empty({0, 2, 3}, DType::kFloat32)),
                     T(Tensor::empty({0, 3, 2}, DType::kFloat32))},
                    {{"beta", F(2.0)}});
  EXPECT_TRUE(tensor_near(r, {2, 2}, {2, 4, 6, 8}));
  r = call_t("baddbmm", {T(self), T(Tensor::empty({0, 2, 3}, DType::kFloat32)),
                         T(Tensor::empty({0, 3, 2}, DType::kFloat32))});
  EXPECT_EQ(r.shape(), (Shape{0, 2, 2}));
  // Empty inner dim: the products are zero.
  r = call_t("baddbmm",
             {T(self), T(Tensor::empty({3, 2, 0}, DType::kFloat32)),
              T(Tensor::empty({3, 0, 2}, DType::kFloat32))},
             {{"beta", F(-1.0)}});
  EXPECT_TRUE(tensor_near(r.select(0, 2), {2, 2}, {-1, -2, -3, -4}));
}

TEST(MatrixBatchOps, InPlace) {
  Tensor self = sample({2, 3, 2}, DType::kFloat32, 9);
  const Tensor before = self.clone();
  const Tensor x = sample({2, 3, 4}, DType::kFloat32, 10),
               y = sample({2, 4, 2}, DType::kFloat32, 11);
  Value r = call("baddbmm_", {T(self), T(x), T(y)}, {{"alpha", F(0.5)}});
  EXPECT_TRUE(r.as_tensor("r").same_view(self));
  EXPECT_TRUE(tensor_near(self, {2, 3, 2}, ref_batch(before, x, y, 1, 0.5, false), 1e-6));
  Tensor acc = sample({3, 2}, DType::kFloat32, 12);
  const Tensor acc0 = acc.clone();
  call("torch.Tensor.addbmm_", {T(acc), T(x), T(y)}, {{"beta", F(0.25)}});
  EXPECT_TRUE(tensor_near(acc, {3, 2}, ref_batch(acc0, x, y, 0.25, 1, true), 1e-6));
  // self must hold the whole result in place.
  Tensor small = Tensor::zeros({3, 2}, DType::kFloat32);
  std::string e = error_of([&] { call("baddbmm_", {T(small), T(x), T(y)}); });
  EXPECT_TRUE(contains(e, "[baddbmm_]") && contains(e, "[3,2]") && contains(e, "[2,3,2]")) << e;
}

TEST(MatrixBatchOps, Errors) {
  const Tensor x = Tensor::zeros({2, 3, 4}, DType::kFloat32);
  std::string e = error_of([&] {
    call("baddbmm", {T(Tensor::zeros({1}, DType::kFloat32)), T(x),
                     T(Tensor::zeros({3, 4, 2}, DType::kFloat32))});
  });
  EXPECT_TRUE(contains(e, "[baddbmm]") && contains(e, "[2,3,4]") && contains(e, "[3,4,2]")) << e;
  e = error_of([&] {
    call("addbmm", {T(Tensor::zeros({1}, DType::kFloat32)), T(x),
                    T(Tensor::zeros({2, 5, 2}, DType::kFloat32))});
  });
  EXPECT_TRUE(contains(e, "[addbmm]") && contains(e, "4 != 5")) << e;
  e = error_of([&] {
    call("baddbmm", {T(Tensor::zeros({2, 3, 3}, DType::kFloat32)), T(x),
                     T(Tensor::zeros({2, 4, 2}, DType::kFloat32))});
  });
  EXPECT_TRUE(contains(e, "[baddbmm] self [2,3,3]") && contains(e, "[2,3,2]")) << e;
  e = error_of([&] {
    call("baddbmm", {T(Tensor::zeros({1}, DType::kFloat64)), T(x),
                     T(Tensor::zeros({2, 4, 2}, DType::kFloat32))});
  });
  EXPECT_TRUE(contains(e, "[baddbmm]") && contains(e, "float64") && contains(e, "float32")) << e;
  const Tensor xi = Tensor::zeros({2, 3, 4}, DType::kInt64);
  e = error_of([&] {
    call("baddbmm",
         {T(Tensor::zeros({1}, DType::kInt64)), T(xi), T(Tensor::zeros({2, 4, 2}, DType::kInt64))},
         {{"alpha", F(0.5)}});
  });
  EXPECT_TRUE(contains(e, "[baddbmm]") && contains(e, "integral")) << e;
}

TEST(MatrixBatchOps, CompiledEqualsEager) {
  GraphBuilder b("baddbmm");
  Node* bias = b.placeholder("bias");
  Node* q = b.placeholder("q");
  Node* k = b.placeholder("k");
  // Scaled scores with an additive mask, as attention implementations write them.
  Node* s = b.call_function("torch.baddbmm", {bias, q, b.call_method("transpose", {k, 1, 2})},
                            {{"beta", 1.0}, {"alpha", 0.125}});
  Node* t = b.call_function("aten.addbmm.default", {b.call_function("torch.select", {bias, 0, 0}),
                                                    q, b.call_method("transpose", {k, 1, 2})});
  b.outputs({s, t});
  auto g = b.build();
  expect_compiled_equals_eager(
      *g,
      {sample({1, 3, 3}, DType::kFloat32, 1), sample({2, 3, 4}, DType::kFloat32, 2),
       sample({2, 3, 4}, DType::kFloat32, 3)},
      1e-6);
}

}  // namespace
}  // namespace inplace::testing
