// rms_norm_linear's norm="layer" (a LayerNorm before the product: GPT-2's ln_1, ln_2 and ln_f
// before the linears over its prepared weights) and the epilogue program of fused_linear and
// rms_norm_linear (GPT-2's GELU after c_fc) on the cpu are, bit for bit, the chains they replace:
// layer_norm, the product, the fused_pointwise kernel; at float32, bfloat16 and float16, one and
// three rows, with and without the norm's bias. The shape rules refuse what the forms are not,
// naming the op.
#include <gtest/gtest.h>

#include <random>

#include "epilogue_programs.h"
#include "test_util.h"

namespace inplace {
using namespace inplace::testing;
namespace {

const Value kLayer = Value::string("layer");

// rms_norm_linear(x, nw, eps, w, b, norm="layer", norm_bias=nb, epilogue=program).
Tensor layer_form(const Tensor& x, const Tensor& nw, const Value& nb, const Tensor& w,
                  const Value& b, const Value& program) {
  return call_t("inplace.rms_norm_linear", {T(x), T(nw), F(1e-5), T(w), b, None(), None(), I(0),
                                            kLayer, L({}), L({}), nb, program});
}

TEST(LayerNormForm, IsTheChainBitForBit) {
  std::mt19937 rng(31);
  const int64_t k = 48, n = 40;
  for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
    for (int64_t rows : {1, 3})
      for (bool biases : {true, false}) {
        SCOPED_TRACE(str_cat(dtype_name(dt), " rows ", rows, biases ? " biases" : ""));
        const Tensor x = uniform_tensor({1, rows, k}, dt, rng);
        const Tensor nw = uniform_tensor({k}, dt, rng), w = uniform_tensor({n, k}, dt, rng);
        const Value nb = biases ? T(uniform_tensor({k}, dt, rng)) : None();
        const Value b = biases ? T(uniform_tensor({n}, dt, rng)) : None();
        const Value program = Value::int_list(gelu_tanh(dt));
        const Tensor normed =
            call_t("aten.layer_norm.default", {T(x), L({I(k)}), T(nw), nb, F(1e-5), B(false)});
        const Tensor product = call_t("inplace.fused_linear", {T(normed), T(w), b});
        EXPECT_TRUE(tensor_equal(layer_form(x, nw, nb, w, b, L({})), product));
        const Tensor gelu = call_t("inplace.fused_pointwise", {L({T(product)}), program});
        EXPECT_TRUE(tensor_equal(layer_form(x, nw, nb, w, b, program), gelu));
        // fused_linear's own epilogue.
        EXPECT_TRUE(tensor_equal(
            call_t("inplace.fused_linear", {T(normed), T(w), b, None(), L({}), L({}), program}),
            gelu));
      }
}

TEST(LayerNormForm, RefusesWhatItIsNot) {
  std::mt19937 rng(32);
  const Tensor x = uniform_tensor({1, 1, 16}, DType::kBFloat16, rng);
  const Tensor nw = uniform_tensor({16}, DType::kBFloat16, rng);
  const Tensor w = uniform_tensor({8, 16}, DType::kBFloat16, rng);
  const Tensor cos = uniform_tensor({8}, DType::kBFloat16, rng), sin = cos;
  // A norm bias belongs to the LayerNorm alone.
  EXPECT_TRUE(mentions(error_of([&] {
                         call_t("inplace.rms_norm_linear",
                                {T(x), T(nw), F(1e-5), T(w), None(), None(), None(), I(0),
                                 Value::string("upcast"), L({}), L({}), T(nw)});
                       }),
                       {"rms_norm_linear", "norm bias"}));
  // The gated MLP's norm form has no LayerNorm.
  EXPECT_TRUE(mentions(error_of([&] {
                         call_t("inplace.rms_norm_gated_mlp",
                                {T(x), T(nw), F(1e-5), T(w), T(w), Value::string("silu"), kLayer});
                       }),
                       {"rms_norm_gated_mlp", "'layer'", "is not one of"}));
  // A LayerNorm weight of another dtype.
  EXPECT_TRUE(mentions(error_of([&] {
                         layer_form(x, uniform_tensor({16}, DType::kFloat16, rng), None(), w,
                                    None(), L({}));
                       }),
                       {"rms_norm_linear", "norm weight"}));
  // No epilogue program after a rotary epilogue.
  EXPECT_TRUE(mentions(error_of([&] {
                         call_t(
                             "inplace.rms_norm_linear",
                             {T(x), T(nw), F(1e-5), T(w), None(), T(cos), T(sin), I(8), kLayer,
                              L({}), L({}), None(), Value::int_list(gelu_tanh(DType::kBFloat16))});
                       }),
                       {"rms_norm_linear", "epilogue"}));
  // An epilogue whose result is of another dtype than the input's.
  EXPECT_TRUE(mentions(error_of([&] {
                         call_t("inplace.fused_linear",
                                {T(x), T(w), None(), None(), L({}), L({}),
                                 Value::int_list(gelu_tanh(DType::kFloat32))});
                       }),
                       {"fused_linear", "epilogue"}));
}

}  // namespace
}  // namespace inplace
