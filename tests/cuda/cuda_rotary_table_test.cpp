// rotary_table on CUDA (fuse_rotary_table's step and its pair kernel) against the unfused CUDA
// chain it replaces, bitwise: the Hugging Face fixtures and the written module (batched, large and
// negative positions of every dtype, inv_freq of both signs, every result dtype) compiled for cuda
// with and without the rewrite, one engine each called on fresh draws; and against the cpu
// engine within the dtype's tolerance (cuda's cosf and sinf may differ from glibc's in the last
// place). Skipped, saying so, without a GPU.
#include <gtest/gtest.h>

#include "compiler/hf_fixtures.h"
#include "compiler/rewrite_differential.h"
#include "compiler/rotary_table_graph.h"
#include "cuda_fixture_engine.h"
#include "cuda_test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

const std::vector<std::string> kTable = {"fuse_rotary_table"};

// Every draw through `fused` (the rewrite), `unfused` (without it) and `cpu`: fused equals
// unfused bitwise, both within `tol` of the cpu.
void expect_table_exact(FixtureEngine& fused, FixtureEngine& unfused, FixtureEngine& cpu,
                        const std::vector<std::vector<Tensor>>& draws) {
  for (size_t d = 0; d < draws.size(); ++d) {
    SCOPED_TRACE(str_cat("draw ", d));
    const std::vector<Tensor> a = fused.call(draws[d]), b = unfused.call(draws[d]),
                              c = cpu.call(draws[d]);
    ASSERT_EQ(a.size(), b.size());
    for (size_t j = 0; j < a.size(); ++j) {
      EXPECT_TRUE(close(a[j], b[j], 0)) << "value " << j;
      EXPECT_TRUE(close(a[j], c[j], dtype_tolerance(a[j].dtype()))) << "value " << j;
    }
  }
}

TEST(CudaRotaryTable, FixturesEqualTheUnfusedChainBitwise) {
  IP_REQUIRE_CUDA();
  for (const char* model : {"llama", "llama_bf16", "gemma_bf16", "qwen2_bf16", "phi3_bf16"}) {
    SCOPED_TRACE(model);
    auto g = hf_fixture(model);
    std::vector<std::vector<Tensor>> draws;
    for (uint32_t s : {0u, 1u, 17u, 46u, 63u}) draws.push_back(seeded_hf_inputs(*g, s, 64));
    FixtureEngine fused(*g, draws[0], Device::cuda()), cpu(*g, draws[0], Device::cpu());
    FixtureEngine unfused(*g, draws[0], Device::cuda(), kTable);
    EXPECT_EQ(count_of(fused.plan(), "= rotary_table("), 2) << fused.plan();
    EXPECT_EQ(count_of(unfused.plan(), "= rotary_table("), 0) << unfused.plan();
    expect_table_exact(fused, unfused, cpu, draws);
  }
}

TEST(CudaRotaryTable, BatchedLargeAndNegativePositionsEveryDtype) {
  IP_REQUIRE_CUDA();
  for (DType positions : {DType::kInt64, DType::kInt32, DType::kFloat32})
    for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
      SCOPED_TRACE(str_cat(dtype_name(positions), " positions, ", dtype_name(dtype)));
      auto g = table_graph(2, 3, 64, positions, dtype);
      std::vector<std::vector<Tensor>> draws;
      for (uint32_t s = 0; s < 3; ++s) {
        draws.push_back(table_draw(*g, s + 1, 0, 131072, s % 2 == 1));
        draws.push_back(table_draw(*g, s + 9, -70000, 1 << 20, true));
      }
      draws.push_back(table_draw(*g, 99, 0, 1, true));  // position 0: -0 products
      FixtureEngine fused(*g, draws[0], Device::cuda()), cpu(*g, draws[0], Device::cpu());
      FixtureEngine unfused(*g, draws[0], Device::cuda(), kTable);
      EXPECT_EQ(count_of(fused.plan(), "= rotary_table("), 2) << fused.plan();
      // Far positions put cos and sin of large arguments in the tables: cuda's and glibc's may
      // differ in the last place there, so the cpu is compared only on the cache's positions.
      for (size_t d = 0; d < draws.size(); ++d) {
        SCOPED_TRACE(str_cat("draw ", d));
        const std::vector<Tensor> a = fused.call(draws[d]), b = unfused.call(draws[d]);
        for (size_t j = 0; j < a.size(); ++j) EXPECT_TRUE(close(a[j], b[j], 0)) << "value " << j;
        if (d % 2 == 0) {
          const std::vector<Tensor> c = cpu.call(draws[d]);
          for (size_t j = 0; j < a.size(); ++j)
            EXPECT_TRUE(close(a[j], c[j], dtype_tolerance(a[j].dtype()) + 1e-5)) << "value " << j;
        }
      }
    }
}

// attention_scaling 0.7 (YaRN): float32 tables, then the scaling and the cast as their own steps.
TEST(CudaRotaryTable, AnotherScalingAfterAFloat32Table) {
  IP_REQUIRE_CUDA();
  auto g = table_graph(1, 1, 64, DType::kInt64, DType::kBFloat16, 0.7);
  std::vector<std::vector<Tensor>> draws;
  for (uint32_t s = 0; s < 4; ++s) draws.push_back(table_draw(*g, s + 3, 0, 4096, s % 2 == 0));
  FixtureEngine fused(*g, draws[0], Device::cuda()), cpu(*g, draws[0], Device::cpu());
  FixtureEngine unfused(*g, draws[0], Device::cuda(), kTable);
  EXPECT_EQ(lines_with(fused.plan(), "= rotary_table(", "float32"), 2) << fused.plan();
  expect_table_exact(fused, unfused, cpu, draws);
}

}  // namespace
