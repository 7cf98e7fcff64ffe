// rms_norm_linear and rms_norm_gated_mlp: the fused products with their RMSNorm prologue
// (fuse_norm_prologues) and the linear form's rotary epilogue (fuse_rotary_epilogues), run op by op
// on the cpu: bit for bit the chains they replace (rms_norm, the product, rotary_embedding of each
// head of the prefix), and errors that name the op.
#include <gtest/gtest.h>

#include <random>

#include "test_util.h"

namespace inplace {
using namespace inplace::testing;
namespace {

TEST(RmsNormPrologue, EqualTheChainsBitForBit) {
  std::mt19937 rng(21);
  const Value eps = Value::floating(1e-6);
  for (int64_t rows : {1, 3})
    for (int64_t k : {8, 40}) {
      SCOPED_TRACE(std::to_string(rows) + " rows, k " + std::to_string(k));
      const int64_t d = 8, heads = 5, n = d * heads;
      const Tensor x = uniform_tensor({1, rows, k}, DType::kFloat32, rng);
      const Tensor nw = uniform_tensor({k}, DType::kFloat32, rng);
      const Tensor w = uniform_tensor({n, k}, DType::kBFloat16, rng);
      const Tensor w2 = uniform_tensor({n, k}, DType::kBFloat16, rng);
      const Tensor b = uniform_tensor({n}, DType::kFloat32, rng);
      const Tensor cos = uniform_tensor({1, 1, 1, d}, DType::kFloat32, rng);
      const Tensor sin = uniform_tensor({1, 1, 1, d}, DType::kFloat32, rng);
      const Tensor normed = call_t("rms_norm", {T(x), Value::int_list({k}), T(nw), eps});
      const Tensor lin = call_t("inplace.fused_linear", {T(normed), T(w), T(b)});
      EXPECT_TRUE(tensor_equal(call_t("inplace.rms_norm_linear", {T(x), T(nw), eps, T(w), T(b)}),
                               lin, 0.0));
      const Tensor sw = call_t("inplace.gated_mlp", {T(normed), T(w), T(w2)});
      EXPECT_TRUE(tensor_equal(
          call_t("inplace.rms_norm_gated_mlp", {T(x), T(nw), eps, T(w), T(w2)}), sw, 0.0));
      // Rotating the first three heads: the product, then rotary_embedding head by head.
      const int64_t cols = 3 * d;
      Tensor want = lin.clone();
      const Tensor heads_view = lin.slice(-1, 0, cols).reshape({1, rows, 3, d});
      const Tensor rotated = call_t("inplace.rotary_embedding", {T(heads_view), T(cos), T(sin)});
      want.slice(-1, 0, cols).copy_from(rotated.reshape({1, rows, cols}));
      const Tensor got = call_t("inplace.rms_norm_linear", {T(x), T(nw), eps, T(w), T(b), T(cos),
                                                            T(sin), Value::integer(cols)});
      EXPECT_TRUE(tensor_equal(got, want, 0.0));
    }
}

TEST(RmsNormPrologue, ErrorsNameTheOp) {
  const Tensor x = Tensor::zeros({1, 1, 8}, DType::kFloat32);
  const Tensor nw = Tensor::zeros({8}, DType::kFloat32);
  const Tensor w = Tensor::zeros({16, 8}, DType::kBFloat16);
  const Tensor cos = Tensor::zeros({8}, DType::kFloat32);
  const Value eps = Value::floating(1e-6);
  // rotary_cols not a whole number of heads, then past the product's columns.
  for (int64_t cols : {12, 24})
    EXPECT_NE(error_of([&] {
                call_t("inplace.rms_norm_linear", {T(x), T(nw), eps, T(w), Value::none(), T(cos),
                                                   T(cos), Value::integer(cols)});
              }).find("[rms_norm_linear] cos [8] and sin [8] must be"),
              std::string::npos)
        << cols;
  // A norm weight of the wrong length: rms_norm's own check.
  EXPECT_NE(error_of([&] {
              call_t("inplace.rms_norm_gated_mlp",
                     {T(x), T(Tensor::zeros({4}, DType::kFloat32)), eps, T(w), T(w)});
            }),
            "<no error>");
}

}  // namespace
}  // namespace inplace
