// The decode product over a weight stored [in, out] (kernels/cpu/gemv_rows.h) on fresh
// draws: its vector kernel byte-equal to its portable loop (std::fma in the same order) at float32,
// bf16 and fp16 weights, every row count up to kGemvRowsMaxRows, widths and depths with every
// tail, the columns split as threads split them; through matmul, a half product x @ W byte-equal
// to the same product against W with a column stride of 2 (the plain loop), a float32 one within
// float rounding of a float64 loop (alpha and beta included), and byte-equal whether the call's
// context has one thread or three.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/cpu/gemv_rows.h"
#include "kernels/cpu/matrix.h"
#include "test_util.h"

namespace inplace::cpu {
using namespace inplace::testing;
namespace {

bool bytes_equal(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  return x.nbytes() == y.nbytes() && std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

template <typename W>
void check_kernels(DType dt, int64_t rows, int64_t k, int64_t n, std::mt19937& rng) {
  const Tensor x = uniform_tensor({rows, k}, DType::kFloat32, rng);
  const Tensor w = uniform_tensor({k, n}, dt, rng);
  std::vector<float> vec(static_cast<size_t>(rows * n)), port(vec.size());
  GemvRowsArgs<W> a{x.data<float>(), k, rows, w.data<W>(), n, n, k, vec.data(), n};
  // Two shares of the columns, as two threads would run them.
  gemv_rows(a, 0, n / 3);
  gemv_rows(a, n / 3, n);
  a.y = port.data();
  gemv_rows(a, 0, n, /*portable=*/true);
  ASSERT_EQ(std::memcmp(vec.data(), port.data(), vec.size() * sizeof(float)), 0);
}

TEST(GemvRows, VectorKernelIsThePortableLoopBitForBit) {
  if (!gemv_rows_vectorized()) GTEST_SKIP() << "this CPU has neither AVX-512F nor AVX2 with FMA";
  std::mt19937 rng(61);
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t rows = 1 + trial % kGemvRowsMaxRows;
    const int64_t k = 1 + static_cast<int64_t>(rng() % (trial % 5 == 4 ? 1500 : 70));
    const int64_t n = 2 + static_cast<int64_t>(rng() % (trial % 7 == 6 ? 5000 : 90));
    SCOPED_TRACE(::testing::Message() << "rows " << rows << " k " << k << " n " << n);
    check_kernels<float>(DType::kFloat32, rows, k, n, rng);
    check_kernels<BFloat16>(DType::kBFloat16, rows, k, n, rng);
    check_kernels<Half>(DType::kFloat16, rows, k, n, rng);
  }
}

TEST(GemvRows, HalfDecodeProductsAreThePlainLoopsBitForBit) {
  std::mt19937 rng(67);
  for (int trial = 0; trial < 30; ++trial) {
    const DType dt = trial % 2 ? DType::kBFloat16 : DType::kFloat16;
    const int64_t m = 1 + trial % 3, k = 1 + static_cast<int64_t>(rng() % 300),
                  n = 200 + static_cast<int64_t>(rng() % 500);
    SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " m " << m << " k " << k << " n " << n);
    const Tensor a = uniform_tensor({m, k}, dt, rng);
    const Tensor b = uniform_tensor({k, n}, dt, rng);  // W [in, out], rows contiguous
    // The same W with a column stride of 2: the plain product loop, one output at a time.
    const Tensor b_strided = Tensor::empty({k, n, 2}, dt).select(2, 0);
    b_strided.copy_from(b);
    for (double beta : {0.0, 0.5}) {
      const Tensor c0 = uniform_tensor({m, n}, dt, rng);
      Tensor got = c0.clone(), want = c0.clone();
      matmul(a, b, got, Scalar(1.5), Scalar(beta));
      matmul(a, b_strided, want, Scalar(1.5), Scalar(beta));
      EXPECT_TRUE(bytes_equal(got, want)) << "beta " << beta;
    }
  }
}

TEST(GemvRows, ThreadsChangeNoBit) {
  std::mt19937 rng(73);
  const Tensor a = uniform_tensor({1, 700}, DType::kFloat32, rng);
  const Tensor b = uniform_tensor({700, 3000}, DType::kFloat32, rng);
  Tensor one = Tensor::empty({1, 3000}, DType::kFloat32), three = one.clone();
  matmul(a, b, one, Scalar(1.0), Scalar(0.0));
  ThreadPool pool(3);
  {
    ScopedThreadPool scope(&pool);
    matmul(a, b, three, Scalar(1.0), Scalar(0.0));
  }
  EXPECT_TRUE(bytes_equal(one, three));
}

TEST(GemvRows, Float32DecodeProductsEqualAFloat64Loop) {
  std::mt19937 rng(71);
  for (int trial = 0; trial < 20; ++trial) {
    const int64_t m = 1 + trial % (kGemvRowsMaxRows + 2), k = 1 + static_cast<int64_t>(rng() % 600),
                  n = 2 + static_cast<int64_t>(rng() % 400);
    SCOPED_TRACE(::testing::Message() << "m " << m << " k " << k << " n " << n);
    const Tensor a = uniform_tensor({m, k}, DType::kFloat32, rng);
    const Tensor b = uniform_tensor({k, n}, DType::kFloat32, rng);
    const Tensor c0 = uniform_tensor({m, n}, DType::kFloat32, rng);
    const double beta = trial % 2 ? 0.0 : 0.25;
    Tensor got = c0.clone();
    matmul(a, b, got, Scalar(2.0), Scalar(beta));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, mag = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double e = double(a.data<float>()[i * k + p]) * double(b.data<float>()[p * n + j]);
          s += e;
          mag += std::fabs(e);
        }
        const double want = 2.0 * s + beta * c0.data<float>()[i * n + j];
        ASSERT_NEAR(got.data<float>()[i * n + j], want, 1e-5 * (mag + 1)) << i << ", " << j;
      }
  }
}

}  // namespace
}  // namespace inplace::cpu
