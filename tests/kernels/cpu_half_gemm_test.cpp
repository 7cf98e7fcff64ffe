// Half-precision matrix products on the cpu (bf16 and fp16, float accumulation), in the two forms
// matrix.cpp runs them:
// - decode size (at most kGemvMaxRows rows of x, k >= 16) over a linear layer's weight (x @ W^T,
//   W's rows contiguous): the float GEMV over x widened to float (exact), each output
//   al * s + be * c rounded to the dtype: bit for bit that, and within float rounding of a
//   float64 loop; fresh draws of x, W, c, alpha and beta over every shape below;
// - anything else (more rows, batched operands, short k, or W^T copied to a contiguous matrix):
//   x @ W^T reads W row by row, eight outputs at a time, and gives gemm_loop's results bit for
//   bit: the same product against a contiguous copy of W^T (the column loop) is byte-equal.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "kernels/cpu/gemv.h"
#include "kernels/cpu/matrix.h"
#include "test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

bool bytes_equal(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  return x.nbytes() == y.nbytes() && std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

TEST(CpuHalfGemm, TransposedWeightRowsGiveTheColumnLoopsBits) {
  std::mt19937 rng(5);
  for (DType dt : {DType::kBFloat16, DType::kFloat16}) {
    for (auto [batch, m, k, n] : {std::array<int64_t, 4>{1, 1, 15, 8},
                                  {1, 2, 7, 37},
                                  {1, 5, 128, 13},
                                  {3, 2, 33, 17},
                                  {2, 8, 1024, 1}}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " batch " << batch << " m " << m
                                        << " k " << k << " n " << n);
      const Tensor a = uniform_tensor({batch, m, k}, dt, rng);
      const Tensor w = uniform_tensor({n, k}, dt, rng);
      const Tensor wt = w.transpose(0, 1);     // b[p][j] = w[j][p]: rows of w contiguous
      const Tensor wt_copy = wt.contiguous();  // the column loop's layout
      for (double beta : {0.0, 0.5}) {
        const Tensor c0 = uniform_tensor({batch, m, n}, dt, rng);
        Tensor got = c0.clone(), want = c0.clone();
        cpu::matmul(a, wt, got, Scalar(1.25), Scalar(beta));
        cpu::matmul(a, wt_copy, want, Scalar(1.25), Scalar(beta));
        EXPECT_TRUE(bytes_equal(got, want)) << "beta " << beta;
      }
    }
  }
}

template <typename T>
void check_decode_product(DType dt, int64_t m, int64_t k, int64_t n, std::mt19937& rng) {
  const Tensor a = uniform_tensor({m, k}, dt, rng);
  const Tensor w = uniform_tensor({n, k}, dt, rng);
  const Tensor c0 = uniform_tensor({m, n}, dt, rng);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  const float alpha = u(rng), beta = rng() % 2 ? 0.0f : u(rng);
  Tensor got = c0.clone();
  cpu::matmul(a, w.transpose(0, 1), got, Scalar(double(alpha)), Scalar(double(beta)));
  // The GEMV over the widened input, finished as the half loop finishes an output.
  const Tensor x = a.to(DType::kFloat32);
  Tensor y = Tensor::empty({m, n}, DType::kFloat32);
  cpu::gemv(cpu::GemvArgs<T>{x.data<float>(), k, m, w.data<T>(), k, n, k, y.data<float>(), n}, 0,
            n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float r = alpha * y.data<float>()[i * n + j];
      if (beta != 0.0f) r += beta * static_cast<float>(c0.data<T>()[i * n + j]);
      const T want = static_cast<T>(r);
      const T have = got.data<T>()[i * n + j];
      ASSERT_EQ(have.bits, want.bits) << "at (" << i << ", " << j << ")";
      // And within the dtype's rounding of a float64 loop.
      double s = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double e = double(static_cast<float>(a.data<T>()[i * k + p])) *
                         double(static_cast<float>(w.data<T>()[j * k + p]));
        s += e;
        mag += std::fabs(e);
      }
      const double c =
          beta != 0.0f ? double(beta) * static_cast<float>(c0.data<T>()[i * n + j]) : 0;
      const double exact = double(alpha) * s + c;
      const double ulp = dt == DType::kBFloat16 ? 1.0 / 128 : 1.0 / 1024;
      ASSERT_NEAR(static_cast<float>(have), exact,
                  ulp * std::fabs(exact) + 1e-5 * std::fabs(alpha) * (mag + 1))
          << "at (" << i << ", " << j << ")";
    }
}

TEST(CpuHalfGemm, DecodeProductsTakeTheGemvBitForBit) {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 24; ++trial) {
    const int64_t m = 1 + trial % cpu::kGemvMaxRows;
    const int64_t k = 16 + static_cast<int64_t>(rng() % (trial % 4 == 3 ? 1200 : 200));
    const int64_t n = 1 + static_cast<int64_t>(rng() % 70);
    SCOPED_TRACE(::testing::Message() << "m " << m << " k " << k << " n " << n);
    check_decode_product<BFloat16>(DType::kBFloat16, m, k, n, rng);
    check_decode_product<Half>(DType::kFloat16, m, k, n, rng);
  }
}

}  // namespace
