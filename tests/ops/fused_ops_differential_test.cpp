// Each fused op of the fused linear family and fused_embedding against its unfused graph, the
// aten chain a model writes (the weight widened by `.to(float32)`, then linear, add, silu, mul,
// rms_norm, embedding), on random inputs with float32 and bfloat16 weights: bit for bit with
// float32 weights at decode rows, within float32 rounding otherwise.
#include <gtest/gtest.h>

#include <random>

#include "test_util.h"

namespace inplace {
using namespace inplace::testing;
namespace {

Tensor widened(const Tensor& w) {
  return call_t("aten._to_copy.default", {T(w)}, {{"dtype", Value::dtype_value(DType::kFloat32)}});
}

Tensor linear(const Tensor& x, const Tensor& w, const Value& bias) {
  return call_t("aten.linear.default", {T(x), T(widened(w)), bias});
}

TEST(FusedOpsDifferential, EachFusedOpEqualsItsUnfusedGraph) {
  std::mt19937 rng(31);
  const Value eps = Value::floating(1e-5);
  for (DType wt : {DType::kFloat32, DType::kBFloat16})
    for (int64_t rows : {1, 3, 6}) {
      SCOPED_TRACE(str_cat(dtype_name(wt), " weights, ", rows, " rows"));
      const int64_t k = 48, n = 40;
      // float32 weights at decode rows: the same GEMV as linear's, bit for bit. bf16 weights:
      // the bf16 GEMV blocks its sums otherwise than the float32 one over the widened weight.
      const double tol = rows <= 4 && wt == DType::kFloat32 ? 0.0 : 1e-5;
      const Tensor x = uniform_tensor({1, rows, k}, DType::kFloat32, rng);
      const Tensor w = uniform_tensor({n, k}, wt, rng);
      const Tensor w2 = uniform_tensor({n, k}, wt, rng);
      const Tensor b = uniform_tensor({n}, DType::kFloat32, rng);
      const Tensor r = uniform_tensor({1, rows, n}, DType::kFloat32, rng);
      const Tensor nw = uniform_tensor({k}, DType::kFloat32, rng);
      for (const Value& bias : {Value::none(), T(b)}) {
        EXPECT_TRUE(tensor_equal(call_t("inplace.fused_linear", {T(x), T(w), bias}),
                                 linear(x, w, bias), tol));
        EXPECT_TRUE(tensor_equal(call_t("inplace.fused_linear", {T(x), T(w), bias, T(r)}),
                                 call_t("aten.add.Tensor", {T(r), T(linear(x, w, bias))}), tol));
      }
      const Tensor gate = call_t("aten.silu.default", {T(linear(x, w, None()))});
      const Tensor mlp = call_t("aten.mul.Tensor", {T(gate), T(linear(x, w2, None()))});
      EXPECT_TRUE(tensor_equal(call_t("inplace.gated_mlp", {T(x), T(w), T(w2)}), mlp, tol));
      const Tensor normed =
          call_t("aten.rms_norm.default", {T(x), Value::int_list({k}), T(nw), eps});
      EXPECT_TRUE(tensor_equal(call_t("inplace.rms_norm_linear", {T(x), T(nw), eps, T(w), T(b)}),
                               linear(normed, w, T(b)), tol));
      const Tensor normed_gate = call_t("aten.silu.default", {T(linear(normed, w, None()))});
      EXPECT_TRUE(tensor_equal(
          call_t("inplace.rms_norm_gated_mlp", {T(x), T(nw), eps, T(w), T(w2)}),
          call_t("aten.mul.Tensor", {T(normed_gate), T(linear(normed, w2, None()))}), tol));
      std::vector<int64_t> ids;
      for (int64_t i = 0; i < rows; ++i) ids.push_back((i * 7 + 3) % n);
      const Tensor idx = Tensor::from_vector<int64_t>(ids, {1, rows});
      EXPECT_TRUE(tensor_equal(call_t("inplace.fused_embedding", {T(idx), T(w)}),
                               widened(call_t("aten.embedding.default", {T(w), T(idx)})), 0.0));
    }
}

// fused_addmm (a weight stored [in, out]) against addmm, add and layer_norm at every dtype it
// takes: the cpu kernel runs the chain's kernels, so bit for bit.
TEST(FusedOpsDifferential, FusedAddmmEqualsItsChain) {
  std::mt19937 rng(47);
  const Value eps = Value::floating(1e-5);
  for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
    for (int64_t rows : {1, 3, 6}) {
      SCOPED_TRACE(str_cat(dtype_name(dt), ", ", rows, " rows"));
      const int64_t k = 48, n = 40;
      const Tensor x = uniform_tensor({1, rows, k}, dt, rng);
      const Tensor w = uniform_tensor({k, n}, dt, rng);
      const Tensor b = uniform_tensor({n}, dt, rng);
      const Tensor r = uniform_tensor({1, rows, n}, dt, rng);
      const Tensor nw = uniform_tensor({k}, dt, rng), nb = uniform_tensor({k}, dt, rng);
      auto product = [&](const Tensor& h, const Value& bias) {
        const Value rows_of_h = T(h.reshape({rows, k}));
        const Tensor p = bias.is_none() ? call_t("aten.mm.default", {rows_of_h, T(w)})
                                        : call_t("aten.addmm.default", {bias, rows_of_h, T(w)});
        return p.reshape({1, rows, n});
      };
      for (const Value& bias : {None(), T(b)}) {
        EXPECT_TRUE(
            tensor_equal(call_t("inplace.fused_addmm", {T(x), T(w), bias}), product(x, bias), 0.0));
        EXPECT_TRUE(tensor_equal(call_t("inplace.fused_addmm", {T(x), T(w), bias, T(r)}),
                                 call_t("aten.add.Tensor", {T(r), T(product(x, bias))}), 0.0));
        for (const Value& norm_bias : {None(), T(nb)}) {
          const Tensor h = call_t("aten.layer_norm.default",
                                  {T(x), Value::int_list({k}), T(nw), norm_bias, eps});
          EXPECT_TRUE(tensor_equal(
              call_t("inplace.fused_addmm", {T(x), T(w), bias, T(r), eps, T(nw), norm_bias}),
              call_t("aten.add.Tensor", {T(product(h, bias)), T(r)}), 0.0));
        }
      }
      // The shape rule names the op: a weight stored [out, in] does not fit.
      EXPECT_THROW(call_t("inplace.fused_addmm", {T(x), T(w.t().contiguous())}), Error);
    }
}

}  // namespace
}  // namespace inplace
