// The CUDA sample_row kernel (sampling over every token on the device) against the cpu kernel,
// bit for bit: the token, the row's total weight and the first NaN, on rows of 1 to 262144
// tokens (one block, a cluster of several) of float32, bfloat16 and float16, every pattern of
// cuda_test_util.h's rows, temperatures from 0.05 to 3, draws at both ends of [0, 2^53) and
// between; rows that are strided views. Prints the time a 128256-token row takes. Skipped
// without a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "cuda_test_util.h"
#include "ops/registry.h"
#include "ops/sampling_weight.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

const Kernel& kernel_on(DeviceType device) {
  const Kernel* k = KernelTable::get().find(*Registry::get().find("sample_row"), device);
  EXPECT_NE(k, nullptr);
  return *k;
}

std::vector<int64_t> sample(const Tensor& row, double temperature, uint64_t draw) {
  const bool cuda = !row.device().is_cpu();
  Tensor out = Tensor::empty({3}, DType::kInt64, row.device());
  kernel_on(row.device().type)({Value::from_tensor(row), Value::floating(temperature),
                                Value::integer(static_cast<int64_t>(draw))},
                               {out}, KernelContext{});
  const Tensor host = cuda ? to_host(out) : out;
  return {host.data<int64_t>()[0], host.data<int64_t>()[1], host.data<int64_t>()[2]};
}

void check_row(const Tensor& row, const std::string& what, std::mt19937_64& rng) {
  const Tensor device_row = to_cuda_view(row);
  const uint64_t last = (uint64_t{1} << sampling::kDrawBits) - 1;
  for (double temperature : {0.05, 0.7, 1.0, 3.0})
    for (uint64_t draw : {uint64_t{0}, last, rng() >> 11, rng() >> 11, rng() >> 11}) {
      const std::vector<int64_t> want = sample(row, temperature, draw);
      ASSERT_EQ(sample(device_row, temperature, draw), want)
          << what << " temperature " << temperature << " draw " << draw;
      ASSERT_TRUE(want[2] >= 0 || (want[0] >= 0 && want[0] < row.numel() && want[1] > 0)) << what;
    }
}

TEST(CudaSampleRow, RowsOfEverySizeDtypeAndPatternAsTheCpu) {
  IP_REQUIRE_CUDA();
  std::mt19937_64 rng(3);
  for (int64_t n : {1, 7, 1000, 4097, 32769, 128256, 262144})
    for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
      for (int pattern = 0; pattern < 6; ++pattern) {
        const Tensor row = pattern_row(n, pattern, dtype, static_cast<uint32_t>(n * 7 + pattern));
        check_row(
            row,
            std::to_string(n) + " " + dtype_name(dtype) + " pattern " + std::to_string(pattern),
            rng);
        if (::testing::Test::HasFatalFailure()) return;
      }
}

TEST(CudaSampleRow, RowsThatAreStridedViews) {
  IP_REQUIRE_CUDA();
  std::mt19937_64 rng(5);
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    const Tensor rows = pattern_row(3 * 50000, 0, dtype, 9).reshape({3, 50000});
    check_row(rows.select(0, 2), "last row", rng);
    check_row(rows.select(1, 777), "a column", rng);
    check_row(rows.select(0, 1).slice(0, 1, std::nullopt, 3), "every third", rng);
  }
}

// The draw sampling makes per token over Llama-3's vocabulary on the device, against the row's
// copy to the host and the host's draw that it replaces (both synchronous, as generate's).
TEST(CudaSampleRow, TimeOfA128256TokenRow) {
  IP_REQUIRE_CUDA();
  const int64_t n = 128256, reps = 200;
  const Tensor host_row = pattern_row(n, 0, DType::kBFloat16, 1);
  const Tensor row = to_cuda_view(host_row);
  using Clock = std::chrono::steady_clock;
  sample(row, 0.8, 12345);
  Clock::time_point t0 = Clock::now();
  for (int i = 0; i < reps; ++i) sample(row, 0.8, static_cast<uint64_t>(i) << 40);
  const double device_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  t0 = Clock::now();
  for (int i = 0; i < reps / 10; ++i) sample(to_host(row), 0.8, static_cast<uint64_t>(i) << 40);
  const double host_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  std::printf(
      "[gpu suite] a draw over 128256 bfloat16 logits: %.1f us on the device (with its copy), "
      "%.1f us copying the row and drawing on the host\n",
      device_us / reps, host_us / (reps / 10));
  EXPECT_EQ(sample(row, 0.8, 99), sample(host_row, 0.8, 99));
}

}  // namespace
