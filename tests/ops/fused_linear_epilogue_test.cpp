// fused_linear with a residual and gated_mlp (fuse_linear_epilogues' steps; silu and gelu_tanh),
// bf16 and float32 weights, against the chains they replace,
// run op by op on the cpu: bit for bit for one to four rows (decode), within float32 rounding
// for six (the chain's matmul sums in another order); with and without a bias, tile-sized and odd
// widths, one and two threads.
#include <gtest/gtest.h>

#include <random>

#include "core/thread_pool.h"
#include "test_util.h"

namespace inplace {
using namespace inplace::testing;
namespace {

void check_shapes(std::mt19937& rng) {
  for (int64_t rows : {1, 3, 4, 6})
    for (int64_t n : {1, 64, 130})
      for (int64_t k : {8, 37, 256}) {
        SCOPED_TRACE(std::to_string(rows) + " rows, n " + std::to_string(n) + ", k " +
                     std::to_string(k));
        const Tensor x = uniform_tensor({1, rows, k}, DType::kFloat32, rng);
        for (DType wt : {DType::kBFloat16, DType::kFloat32}) {
          SCOPED_TRACE(dtype_name(wt));
          const Tensor w = uniform_tensor({n, k}, wt, rng);
          const Tensor w2 = uniform_tensor({n, k}, wt, rng);
          const Tensor b = uniform_tensor({n}, DType::kFloat32, rng);
          const Tensor r = uniform_tensor({1, rows, n}, DType::kFloat32, rng);
          // Past four rows fused_linear multiplies through the widened matmul (another sum
          // order); the fused steps, made for decode only, keep the gemv: float32 rounding apart.
          const double tol = rows <= 4 ? 0.0 : 1e-4;
          for (const Value& bias : {Value::none(), T(b)}) {
            const Tensor lin = call_t("inplace.fused_linear", {T(x), T(w), bias});
            const Tensor want = call_t("add", {T(r), T(lin)});
            const Tensor got = call_t("inplace.fused_linear", {T(x), T(w), bias, T(r)});
            EXPECT_TRUE(tensor_equal(got, want, tol));
          }
          const Tensor g = call_t("inplace.fused_linear", {T(x), T(w), Value::none()});
          const Tensor u = call_t("inplace.fused_linear", {T(x), T(w2), Value::none()});
          const Tensor want = call_t("mul", {T(call_t("silu", {T(g)})), T(u)});
          const Tensor got = call_t("inplace.gated_mlp", {T(x), T(w), T(w2)});
          EXPECT_TRUE(tensor_equal(got, want, tol));
          // GeGLU: gelu(g, approximate='tanh') * u.
          const Tensor gelu = call_t("gelu", {T(g)}, {{"approximate", Value::string("tanh")}});
          EXPECT_TRUE(tensor_equal(
              call_t("inplace.gated_mlp", {T(x), T(w), T(w2), Value::string("gelu_tanh")}),
              call_t("mul", {T(gelu), T(u)}), tol));
        }
      }
}

TEST(FusedLinearEpilogues, EqualTheChainsBitForBit) {
  std::mt19937 rng(11);
  check_shapes(rng);
}

TEST(FusedLinearEpilogues, EqualTheChainsBitForBitOnTwoThreads) {
  ThreadPool pool(2);
  ScopedThreadPool scope(&pool);
  std::mt19937 rng(12);
  check_shapes(rng);
}

// At bf16 each step of the chain rounds: the gate and up products, the activation and the
// product of the two; the fused op rounds where they do.
TEST(FusedLinearEpilogues, HalfGatedMlpEqualsTheChainForEachActivation) {
  std::mt19937 rng(13);
  for (int64_t rows : {1, 3}) {
    const Tensor x = uniform_tensor({1, rows, 40}, DType::kBFloat16, rng);
    const Tensor w = uniform_tensor({24, 40}, DType::kBFloat16, rng);
    const Tensor w2 = uniform_tensor({24, 40}, DType::kBFloat16, rng);
    const Tensor g = call_t("linear", {T(x), T(w)}), u = call_t("linear", {T(x), T(w2)});
    EXPECT_TRUE(tensor_equal(call_t("inplace.gated_mlp", {T(x), T(w), T(w2)}),
                             call_t("mul", {T(call_t("silu", {T(g)})), T(u)})));
    const Tensor gelu = call_t("gelu", {T(g)}, {{"approximate", Value::string("tanh")}});
    EXPECT_TRUE(
        tensor_equal(call_t("inplace.gated_mlp", {T(x), T(w), T(w2), Value::string("gelu_tanh")}),
                     call_t("mul", {T(gelu), T(u)})));
  }
}

TEST(FusedLinearEpilogues, ShapeErrorsNameTheOpAndTheOperand) {
  const Tensor x = Tensor::zeros({1, 1, 8}, DType::kFloat32);
  const Tensor w = Tensor::zeros({4, 8}, DType::kBFloat16);
  const Tensor w_bad = Tensor::zeros({5, 8}, DType::kBFloat16);
  const Tensor r_bad = Tensor::zeros({1, 1, 5}, DType::kFloat32);
  EXPECT_NE(error_of([&] {
              call_t("inplace.fused_linear", {T(x), T(w), Value::none(), T(r_bad)});
            }).find("fused_linear] residual [1,1,5]"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              call_t("inplace.gated_mlp", {T(x), T(w), T(w_bad)});
            }).find("gated_mlp] gate weight [4,8] bfloat16 and up weight [5,8] bfloat16 differ"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              call_t("inplace.gated_mlp", {T(x), T(w.to(DType::kFloat64)), T(w)});
            }).find("gated_mlp] expected a floating input and a weight of a float dtype no wider"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              call_t("inplace.gated_mlp", {T(x), T(w), T(w), Value::string("gelu")});
            }).find("[gated_mlp] activation 'gelu' is not supported ('silu' and 'gelu_tanh' are)"),
            std::string::npos);
}

}  // namespace
}  // namespace inplace
