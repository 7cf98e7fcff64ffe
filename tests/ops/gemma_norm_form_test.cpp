// The norm forms' norm="upcast_one_plus_weight" (Gemma's RMSNorm at a half dtype, its weight the
// model's own w: the form computes 1 + w.to(float32) itself) on the cpu is, bit for bit, the chain
// it replaces: w cast to float32, the add of the number 1, upcast_rms_norm(x, that, eps, True),
// then the product (rms_norm_linear with its bias and rotary epilogue, rms_norm_gated_mlp with
// both activations), at bf16 and fp16, w of the input's dtype or float32. The shape rule refuses
// a weight of another dtype.
#include <gtest/gtest.h>

#include <random>

#include "test_util.h"

namespace inplace {
using namespace inplace::testing;
namespace {

const Value kForm = Value::string("upcast_one_plus_weight");

// 1 + w.to(float32) as torch.export records Gemma's weight.
Tensor one_plus(const Tensor& w) {
  const Tensor up = call_t("aten.to.dtype", {T(w), Value::dtype_value(DType::kFloat32)});
  return call_t("aten.add.Tensor", {T(up), F(1.0)});
}

TEST(GemmaNormForm, IsTheChainBitForBit) {
  std::mt19937 rng(29);
  const int64_t k = 48, n = 32, d = 16;
  const double eps = 1e-6;
  for (DType x_dt : {DType::kBFloat16, DType::kFloat16})
    for (DType w_dt : {x_dt, DType::kFloat32})
      for (int64_t rows : {1, 3}) {
        SCOPED_TRACE(str_cat(dtype_name(x_dt), " weight ", dtype_name(w_dt), " rows ", rows));
        const Tensor x = uniform_tensor({1, rows, k}, x_dt, rng);
        // Gemma's weights lie around 0: 1 + w near 1, where float32's rounding shows.
        const Tensor nw = uniform_tensor({k}, w_dt, rng);
        const Tensor w = uniform_tensor({n, k}, x_dt, rng), w2 = uniform_tensor({n, k}, x_dt, rng);
        const Tensor b = uniform_tensor({n}, x_dt, rng);
        const Tensor cos = uniform_tensor({d}, x_dt, rng), sin = uniform_tensor({d}, x_dt, rng);
        const Tensor normed =
            call_t("inplace.upcast_rms_norm", {T(x), T(one_plus(nw)), F(eps), B(true)});

        const Tensor linear = call_t("inplace.fused_linear", {T(normed), T(w), T(b)});
        EXPECT_TRUE(tensor_equal(call_t("inplace.rms_norm_linear", {T(x), T(nw), F(eps), T(w), T(b),
                                                                    None(), None(), I(0), kForm}),
                                 linear));
        const Tensor rotated =  // each head of d columns
            call_t("inplace.rotary_embedding",
                   {T(linear.reshape({1, rows, n / d, d})), T(cos), T(sin)})
                .reshape({1, rows, n});
        EXPECT_TRUE(tensor_equal(call_t("inplace.rms_norm_linear", {T(x), T(nw), F(eps), T(w), T(b),
                                                                    T(cos), T(sin), I(n), kForm}),
                                 rotated));
        for (const char* act : {"silu", "gelu_tanh"}) {
          SCOPED_TRACE(act);
          const Tensor want =
              call_t("inplace.gated_mlp", {T(normed), T(w), T(w2), Value::string(act)});
          EXPECT_TRUE(
              tensor_equal(call_t("inplace.rms_norm_gated_mlp",
                                  {T(x), T(nw), F(eps), T(w), T(w2), Value::string(act), kForm}),
                           want));
        }
      }
}

TEST(GemmaNormForm, RefusesAWeightOfAnotherDtype) {
  std::mt19937 rng(30);
  const Tensor x = uniform_tensor({1, 1, 8}, DType::kBFloat16, rng);
  const Tensor nw = uniform_tensor({8}, DType::kFloat16, rng);
  const Tensor w = uniform_tensor({4, 8}, DType::kBFloat16, rng);
  try {
    call_t("inplace.rms_norm_linear",
           {T(x), T(nw), F(1e-6), T(w), None(), None(), None(), I(0), kForm});
    FAIL() << "a float16 norm weight with a bfloat16 input was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDTypeMismatch);
    EXPECT_NE(std::string(e.what()).find("upcast_one_plus_weight"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace inplace
