// The cpu's unit-stride fast paths for half rows against their strided forms, byte for byte on
// fresh draws: softmax over a contiguous bf16 / fp16 row (each exp computed once, in a
// vectorised loop) against the same rows read with a stride (the general loop), and the
// product loop over b's unit-stride rows (64 and 16 outputs held over all of p) against b with a
// column stride (one output at a time), at bf16, fp16 and int64, widths not a multiple of 16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "kernels/cpu/matrix.h"
#include "kernels/cpu/reduction.h"
#include "test_util.h"

namespace inplace::cpu {
using namespace inplace::testing;
namespace {

// uniform_tensor, or integers in [-1000, 1000] for int64.
Tensor draw(const Shape& shape, DType dt, std::mt19937& rng) {
  if (dt != DType::kInt64) return uniform_tensor(shape, dt, rng);
  Tensor t = Tensor::empty(shape, dt);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<int64_t>()[i] = static_cast<int64_t>(rng() % 2001) - 1000;
  return t;
}

bool bytes_equal(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  return x.nbytes() == y.nbytes() && std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

TEST(CpuHalfRows, SoftmaxOfContiguousRowsEqualsTheStridedLoop) {
  std::mt19937 rng(41);
  for (int trial = 0; trial < 40; ++trial) {
    const DType dt = trial % 2 ? DType::kBFloat16 : DType::kFloat16;
    const int64_t rows = 1 + trial % 5, n = 1 + static_cast<int64_t>(rng() % 700);
    SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " rows " << rows << " n " << n);
    Tensor f = Tensor::empty({rows, n}, DType::kFloat32);
    std::uniform_real_distribution<float> u(-12.0f, 12.0f);
    for (int64_t i = 0; i < f.numel(); ++i) {
      float v = u(rng);
      if (trial % 4 == 3 && rng() % 5 == 0) v = -std::numeric_limits<float>::infinity();
      f.data<float>()[i] = v;
    }
    const Tensor x = f.to(dt);
    Tensor got = Tensor::empty({rows, n}, dt);
    softmax(x, 1, false, got);
    // The same rows as columns of a transposed copy: stride `rows` along the softmax dim.
    const Tensor xt = x.t().contiguous().t();
    Tensor want_t = Tensor::empty({n, rows}, dt);
    const Tensor want = want_t.t();
    softmax(xt, 1, false, want);
    EXPECT_TRUE(bytes_equal(got, want));
  }
}

TEST(CpuHalfRows, ProductOverUnitStrideRowsEqualsTheStridedLoop) {
  std::mt19937 rng(43);
  for (int trial = 0; trial < 30; ++trial) {
    const DType dt =
        std::array<DType, 3>{DType::kBFloat16, DType::kFloat16, DType::kInt64}[trial % 3];
    // More than four rows of a, so that no GEMV takes the half product.
    const int64_t m = 5 + trial % 3, k = 1 + static_cast<int64_t>(rng() % 300),
                  n = 1 + static_cast<int64_t>(rng() % 200);
    SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " m " << m << " k " << k << " n " << n);
    const Tensor a = draw({m, k}, dt, rng);
    const Tensor b = draw({k, n}, dt, rng);           // rows of unit stride
    const Tensor b_strided = b.t().contiguous().t();  // column stride k
    for (double beta : {0.0, 0.5}) {
      const Tensor c0 = draw({m, n}, dt, rng);
      Tensor got = c0.clone(), want = c0.clone();
      matmul(a, b, got, Scalar(1), Scalar(dt == DType::kInt64 ? 0.0 : beta));
      matmul(a, b_strided, want, Scalar(1), Scalar(dt == DType::kInt64 ? 0.0 : beta));
      EXPECT_TRUE(bytes_equal(got, want)) << "beta " << beta;
    }
  }
}

}  // namespace
}  // namespace inplace::cpu
