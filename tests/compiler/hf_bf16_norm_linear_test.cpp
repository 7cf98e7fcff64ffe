// Hugging Face decoders exported in bf16 (torch.export fixtures, random weights) reach the fused
// norm and linear ops: the RMSNorm with its float32 upcast and cast back becomes
// upcast_rms_norm, the linears fused_linear (the residual adds after o_proj and down_proj as its
// epilogue), silu(gate) * up a gated_mlp, and with the GPU's preferences each norm joins the
// products it feeds (rms_norm_linear, rms_norm_gated_mlp). Every output and cache is bitwise
// the eager interpreter's: the fused ops round where the chain rounds. Engines are built once
// and run on fresh draws.
#include <gtest/gtest.h>

#include "compiler/hf_fixtures.h"
#include "compiler/rewrite_differential.h"
#include "frontend/graph_json.h"

namespace inplace::testing {
namespace {

std::string plan_of(const Graph& g, const std::vector<Tensor>& example, CompileOptions o = {}) {
  return compile(g, clones(example), o).engine->describe();
}

TEST(HfBf16NormLinear, FixturesAreBitwiseEagerOnFreshDraws) {
  for (const char* model : {"llama_bf16", "mistral_bf16", "gemma_bf16"}) {
    auto g = hf_fixture(model);
    std::vector<std::vector<Tensor>> draws;
    for (uint32_t s = 1; s <= 4; ++s) draws.push_back(seeded_hf_inputs(*g, s * 13, 48));
    for (bool gpu : {false, true}) {
      SCOPED_TRACE(str_cat(model, gpu ? " with the GPU's fusions" : " with the cpu's fusions"));
      EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 0,
                                             gpu ? gpu_like_options() : CompileOptions{}),
                4);
    }
  }
}

TEST(HfBf16NormLinear, LlamaPlanHasNoNormChainAndFusedLinears) {
  auto g = hf_fixture("llama_bf16");
  const std::vector<Tensor> example = seeded_hf_inputs(*g, 1, 48);
  const std::string cpu = plan_of(*g, example);
  for (const char* gone : {"= pow.", "= mean.", "= rsqrt", "= linear(", "= silu", "= mul."})
    EXPECT_EQ(count_of(cpu, gone), 0) << gone << "\n" << cpu;
  EXPECT_EQ(count_of(cpu, "= upcast_rms_norm("), 5) << cpu;  // 2 per layer and the final norm
  // q, k, v, o (+ residual), down (+ residual) per layer, and the LM head.
  EXPECT_EQ(count_of(cpu, "= fused_linear("), 11) << cpu;
  EXPECT_EQ(lines_with(cpu, "_linear_add = fused_linear(", "bfloat16"), 4) << cpu;
  EXPECT_EQ(count_of(cpu, "= gated_mlp("), 2) << cpu;
  // No cast left on its own: the positions' are folded (fold_position_arithmetic), the rotary
  // tables' are in their rotary_table steps.
  EXPECT_EQ(count_of(cpu, "to.dtype"), 0) << cpu;

  const std::string gpu = plan_of(*g, example, gpu_like_options());
  EXPECT_EQ(count_of(gpu, "upcast_rms_norm"), 0) << gpu;
  // q, k and v one grouped product per layer (their weights are the caller's: not stacked),
  // normalising its input; the LM head the final norm's.
  EXPECT_EQ(count_of(gpu, "= rms_norm_linear("), 3) << gpu;
  EXPECT_EQ(count_of(gpu, "= rms_norm_gated_mlp("), 2) << gpu;
  EXPECT_EQ(count_of(gpu, "= fused_linear("), 4) << gpu;  // o_proj and down_proj, with residual
}

TEST(HfBf16NormLinear, GemmaNormWeightsInFloat) {
  auto g = hf_fixture("gemma_bf16");
  const std::string cpu = plan_of(*g, seeded_hf_inputs(*g, 1, 48));
  EXPECT_EQ(count_of(cpu, "= upcast_rms_norm("), 5) << cpu;
  EXPECT_EQ(count_of(cpu, "= pow."), 0) << cpu;
  EXPECT_EQ(count_of(cpu, "= type_as"), 0) << cpu;
}

}  // namespace
}  // namespace inplace::testing
