// Half-precision matrix products on the cpu: x @ W^T with W's rows contiguous (a linear layer)
// reads W row by row, eight outputs at a time, and gives gemm_loop's results bit for bit: the
// same product against a contiguous copy of W^T (which takes the column loop) is byte-equal, at
// bf16 and fp16, with alpha/beta (addmm), output widths not a multiple of eight, one row
// (decode) and several (prefill), and batched operands.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

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
    for (auto [batch, m, k, n] : {std::array<int64_t, 4>{1, 1, 64, 8},
                                  {1, 1, 300, 37},
                                  {1, 5, 128, 13},
                                  {3, 2, 33, 17},
                                  {1, 4, 1024, 1}}) {
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

}  // namespace
