// The CUDA topk kernel (sampling's selection on the device) against the host's order, exactly:
// value descending, the smaller index first among equal values, NaN first, -0 equal to +0; on
// rows of 1 to 300000 elements (one block, several, past the register cache) of float32,
// bfloat16 and float16, k from 1 to 1024 and up to n, rows of ties, of -inf, all equal, with
// NaN; lanes along either dim of strided views. Prints the time a 128256-token row takes.
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "cuda_test_util.h"
#include "ops/registry.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

const Kernel& cuda_topk() {
  const Kernel* k = KernelTable::get().find(*Registry::get().find("topk"), DeviceType::kCuda);
  EXPECT_NE(k, nullptr);
  return *k;
}

// The host's order over a lane (values as doubles): NaN first, then by value, stable.
std::vector<int64_t> host_order(const std::vector<double>& v) {
  std::vector<int64_t> order(v.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const bool na = std::isnan(v[a]), nb = std::isnan(v[b]);
    return na != nb ? na : (!na && v[a] > v[b]);
  });
  return order;
}

bool same_value(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
}

// topk(x, k, dim) on the device against the host's order along dim, every lane.
void check_topk(const Tensor& x, int64_t k, int64_t dim, const std::string& what) {
  SCOPED_TRACE(what + " k " + std::to_string(k));
  Shape shape = x.shape();
  shape[dim] = k;
  Tensor values = Tensor::empty(shape, x.dtype(), Device::cuda());
  Tensor indices = Tensor::empty(shape, DType::kInt64, Device::cuda());
  cuda_topk()({Value::from_tensor(to_cuda_view(x)), Value::integer(k), Value::integer(dim),
               Value::boolean(true), Value::boolean(true)},
              {values, indices}, KernelContext{});
  // Lanes last: the same transpose of all three enumerates their lanes alike.
  const int64_t last = x.dim() - 1;
  const Tensor xt = x.transpose(dim, last).contiguous();
  const Tensor vt = to_host(values).transpose(dim, last).contiguous();
  const Tensor it = to_host(indices).transpose(dim, last).contiguous();
  const int64_t n = x.size(dim), lanes = x.numel() / n;
  const std::vector<double> all = xt.to_double_vector(), got = vt.to_double_vector();
  for (int64_t l = 0; l < lanes; ++l) {
    const std::vector<double> lane(all.begin() + l * n, all.begin() + (l + 1) * n);
    const std::vector<int64_t> order = host_order(lane);
    for (int64_t j = 0; j < k; ++j) {
      ASSERT_EQ(it.data<int64_t>()[l * k + j], order[j]) << "lane " << l << " place " << j;
      ASSERT_TRUE(same_value(got[l * k + j], lane[order[j]]))
          << "lane " << l << " place " << j << ": " << got[l * k + j] << " for " << lane[order[j]];
    }
  }
}

TEST(CudaTopk, RowsOfEverySizeDtypeAndPatternInTheHostsOrder) {
  IP_REQUIRE_CUDA();
  for (int64_t n : {1, 7, 1000, 4097, 128256, 262144, 300000})
    for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
      for (int pattern = 0; pattern < 6; ++pattern) {
        const Tensor row = pattern_row(n, pattern, dtype, static_cast<uint32_t>(n + pattern));
        const std::string what =
            std::to_string(n) + " " + dtype_name(dtype) + " pattern " + std::to_string(pattern);
        for (int64_t k : {int64_t{1}, int64_t{2}, int64_t{50}, int64_t{1024}, n})
          if (k <= n && k <= 1024) check_topk(row, k, 0, what);
        if (::testing::Test::HasFatalFailure()) return;
      }
}

TEST(CudaTopk, LanesAlongEitherDimOfStridedViews) {
  IP_REQUIRE_CUDA();
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    const Tensor rows = pattern_row(4 * 5000, 1, dtype, 9).reshape({4, 5000});
    check_topk(rows, 50, 1, "rows");
    check_topk(rows.transpose(0, 1), 50, 0, "transposed");
    check_topk(rows.slice(1, 0, std::nullopt, 2), 1024, 1, "every second");
    const Tensor cube = pattern_row(2 * 3 * 700, 0, dtype, 4).reshape({2, 3, 700});
    check_topk(cube.transpose(1, 2), 3, 2, "middle lanes");
    check_topk(cube, 700, 2, "whole lanes");
  }
}

// The selection sampling makes per token at Llama-3's vocabulary, against the row's copy to the
// host that it replaces (both synchronous, as generate's).
TEST(CudaTopk, TimeOfA128256TokenRow) {
  IP_REQUIRE_CUDA();
  const int64_t n = 128256, k = 50, reps = 200;
  const Tensor row = to_cuda_view(pattern_row(n, 0, DType::kFloat32, 1));
  Tensor values = Tensor::empty({k}, DType::kFloat32, Device::cuda());
  Tensor indices = Tensor::empty({k}, DType::kInt64, Device::cuda());
  using Clock = std::chrono::steady_clock;
  auto run = [&] {
    cuda_topk()({Value::from_tensor(row), Value::integer(k), Value::integer(0),
                 Value::boolean(true), Value::boolean(true)},
                {values, indices}, KernelContext{});
    return to_host(indices).data<int64_t>()[0];
  };
  run();
  Clock::time_point t0 = Clock::now();
  for (int i = 0; i < reps; ++i) run();
  const double device_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  t0 = Clock::now();
  for (int i = 0; i < reps; ++i) {
    std::vector<double> host = to_host(row).to_double_vector();
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), int64_t{0});
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int64_t a, int64_t b) { return host[a] > host[b]; });
  }
  const double host_us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  std::printf(
      "[gpu suite] top-50 of 128256 float32: %.1f us on the device (with its copy), "
      "%.1f us copying the row and selecting on the host\n",
      device_us / reps, host_us / reps);
  EXPECT_GE(run(), 0);
}

}  // namespace
