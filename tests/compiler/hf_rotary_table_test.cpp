// fuse_rotary_table: Hugging Face's rotary tables (cos and sin of cat(freqs, freqs), freqs the
// outer product of inv_freq and the positions, each * attention_scaling 1.0 and cast to the
// activations' dtype) become two rotary_table steps. Proved bitwise on the cpu: each fixture, and
// written graphs with batched positions, large and negative positions, inv_freq of both signs
// (a -0 product) and every result dtype, compiled once with the rewrite and once without, both run
// on fresh draws; every output and the final contents of every cache must be equal. Forms it must
// leave alone (another scaling, a product read elsewhere) keep their chain.
#include <gtest/gtest.h>

#include "compiler/hf_fixtures.h"
#include "compiler/qkv_rotary_graph.h"
#include "compiler/rewrite_differential.h"
#include "compiler/rotary_table_graph.h"
#include "frontend/graph_json.h"
#include "ops/rotary_table_args.h"

namespace inplace::testing {
namespace {

const std::vector<std::string> kTable = {"fuse_rotary_table"};

TEST(HfRotaryTable, FixturesBitwiseWithAndWithoutTheTable) {
  for (const char* model : {"llama", "mistral", "qwen2", "gemma", "phi3", "llama_bf16",
                            "mistral_bf16", "qwen2_bf16", "gemma_bf16", "phi3_bf16"}) {
    SCOPED_TRACE(model);
    auto g = hf_fixture(model);
    const std::vector<std::vector<Tensor>> draws = rotary_draws_across(*g, 64);
    const std::string plan = expect_rewrite_exact(*g, draws[1], draws, kTable, 0);
    EXPECT_EQ(count_of(plan, "= rotary_table("), 2) << plan;  // cos and sin
    EXPECT_EQ(count_of(plan, "= cos("), 0) << plan;
    EXPECT_EQ(count_of(plan, "= sin("), 0) << plan;
    EXPECT_EQ(count_of(plan, "= cat("), 0) << plan;
  }
}

// The bf16 Llama with its dtype renamed: float16 tables, and the eager interpreter agrees.
TEST(HfRotaryTable, LlamaAtFloat16BitwiseAndAsEager) {
  auto g = hf_fixture_at_float16("llama_bf16", "llama_fp16");
  const std::vector<std::vector<Tensor>> draws = rotary_draws_across(*g, 64);
  const std::string plan = expect_rewrite_exact(*g, draws[0], draws, kTable, 0);
  EXPECT_EQ(lines_with(plan, "= rotary_table(", "float16"), 2) << plan;
  EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 0), static_cast<int>(draws.size()));
}

TEST(HfRotaryTable, BatchedLargeAndNegativePositionsEveryDtype) {
  for (DType positions : {DType::kInt64, DType::kInt32, DType::kFloat32})
    for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
      SCOPED_TRACE(str_cat(dtype_name(positions), " positions, ", dtype_name(dtype)));
      auto g = table_graph(2, 3, 32, positions, dtype);
      std::vector<std::vector<Tensor>> draws;
      for (uint32_t s = 0; s < 4; ++s) {
        draws.push_back(table_draw(*g, s + 1, 0, 4096, s % 2 == 1));    // a cache's positions
        draws.push_back(table_draw(*g, s + 9, -70000, 1 << 20, true));  // far, and negative
      }
      draws.push_back(table_draw(*g, 99, 0, 1, true));  // position 0: -0 products
      const std::string plan = expect_rewrite_exact(*g, draws[0], draws, kTable, 0);
      EXPECT_EQ(count_of(plan, "= rotary_table("), 2) << plan;
      EXPECT_EQ(count_of(plan, "= cat("), 0) << plan;
      EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 0),
                static_cast<int>(draws.size()));
    }
}

TEST(HfRotaryTable, AnotherScalingStaysAStepAndAProductReadElsewhereKeepsTheChain) {
  // attention_scaling 0.7 (YaRN): float32 tables, then the scaling and the cast as before.
  auto scaled = table_graph(1, 1, 16, DType::kInt64, DType::kBFloat16, 0.7);
  std::vector<std::vector<Tensor>> draws;
  for (uint32_t s = 0; s < 3; ++s) draws.push_back(table_draw(*scaled, s + 1, 0, 512, true));
  std::string plan = expect_rewrite_exact(*scaled, draws[0], draws, kTable, 0);
  EXPECT_EQ(lines_with(plan, "= rotary_table(", "float32"), 2) << plan;
  EXPECT_EQ(count_of(plan, "= cat("), 0) << plan;
  EXPECT_EQ(lines_with(plan, "= rotary_table(", "bfloat16"), 0) << plan;  // scaled, then cast
  // The frequencies are also an output: they stay, and so does the whole chain.
  auto shared = table_graph(1, 2, 16, DType::kInt64, DType::kBFloat16, 1.0, true);
  draws.clear();
  for (uint32_t s = 0; s < 3; ++s) draws.push_back(table_draw(*shared, s + 5, 0, 512, true));
  plan = expect_rewrite_exact(*shared, draws[0], draws, kTable, 0);
  EXPECT_EQ(count_of(plan, "= rotary_table("), 0) << plan;
}

TEST(HfRotaryTable, TheOpRefusesOperandsItDoesNotComputeNamingItself) {
  const Tensor inv = Tensor::zeros({1, 8, 1}, DType::kFloat32);
  const Tensor pos = Tensor::zeros({1, 1, 3}, DType::kInt64);
  auto meta = [](const Tensor& f, const Tensor& p, Value dtype) {
    return rotary_table::result_meta(
        {Value::from_tensor(f), Value::from_tensor(p), Value::boolean(false), dtype});
  };
  const Tensor ok = meta(inv, pos, Value::dtype_value(DType::kBFloat16));
  EXPECT_EQ(ok.shape(), (Shape{1, 3, 16}));
  EXPECT_EQ(ok.dtype(), DType::kBFloat16);
  EXPECT_EQ(meta(inv, pos, Value::none()).dtype(), DType::kFloat32);
  auto refused = [&](const Tensor& f, const Tensor& p, Value dtype, const std::string& what) {
    try {
      meta(f, p, dtype);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("[rotary_table]"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused(Tensor::zeros({1, 8, 1}, DType::kBFloat16), pos, Value::none(), "inv_freq");
  refused(inv, Tensor::zeros({1, 2, 3}, DType::kInt64), Value::none(), "positions");
  refused(inv, Tensor::zeros({1, 1, 3}, DType::kFloat64), Value::none(), "positions");
  refused(Tensor::zeros({2, 8, 1}, DType::kFloat32), Tensor::zeros({3, 1, 3}, DType::kInt64),
          Value::none(), "broadcast");
  refused(inv, pos, Value::dtype_value(DType::kInt64), "the result");
}

}  // namespace
}  // namespace inplace::testing
