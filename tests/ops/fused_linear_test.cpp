// fused_linear against a float64 loop over the same bf16 weight: decode rows (the GEMV),
// prompts of up to 256 rows (the GEMV in passes of four rows) and longer ones (sgemm on the
// widened weight), with and without a bias.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "test_util.h"

namespace inplace {
using namespace inplace::testing;
namespace {

TEST(FusedLinear, EveryRowCountMatchesAFloat64Loop) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t n = 24, k = 40;
  Tensor w = Tensor::empty({n, k}, DType::kBFloat16);
  for (int64_t i = 0; i < n * k; ++i) w.data<BFloat16>()[i] = BFloat16(u(rng));
  Tensor bias = Tensor::empty({n}, DType::kFloat32);
  for (int64_t j = 0; j < n; ++j) bias.data<float>()[j] = u(rng);
  for (int64_t rows : {1, 4, 5, 32, 33, 256, 300}) {
    for (bool with_bias : {false, true}) {
      Tensor x = Tensor::empty({1, rows, k}, DType::kFloat32);
      for (int64_t i = 0; i < rows * k; ++i) x.data<float>()[i] = u(rng);
      Tensor y = call_t("fused_linear", {T(x), T(w), with_bias ? T(bias) : None()});
      ASSERT_EQ(y.shape(), (Shape{1, rows, n}));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < n; ++j) {
          double want = with_bias ? bias.data<float>()[j] : 0.0;
          for (int64_t l = 0; l < k; ++l)
            want +=
                double(x.data<float>()[r * k + l]) * double(float(w.data<BFloat16>()[j * k + l]));
          ASSERT_NEAR(y.data<float>()[r * n + j], want, 1e-4)
              << "rows " << rows << " bias " << with_bias << " at " << r << ", " << j;
        }
    }
  }
}

}  // namespace
}  // namespace inplace
