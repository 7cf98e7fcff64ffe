// The q/k/v products of Hugging Face decoders exported in bf16 or fp16, with the GPU's fusion
// choices: their weights are the caller's (graph inputs), so merge_sibling_linears makes one
// grouped product a layer (fused_linear's more_weights, then rms_norm_linear's with the norm
// prologue) instead of stacking them into a constant; Qwen2's q/k/v products have biases, each
// weight's own (more_biases), and its layer takes as many steps as Llama's. Proved bitwise: each
// fixture is compiled
// once with the merge and once without, and both run on fresh draws (weights, tokens, positions
// across the whole cache, cache contents); every output and the final contents of every cache
// must be equal.
#include <gtest/gtest.h>

#include "compiler/hf_fixtures.h"
#include "compiler/rewrite_differential.h"
#include "frontend/graph_json.h"

namespace inplace::testing {
namespace {

// The GPU's fusion choices (its FusionPreferences), compiled for the cpu; the merge on or off.
CompileOptions gpu_like(bool merge) {
  CompileOptions o = gpu_like_options({"fuse_pointwise"});
  o.merge_sibling_linears = merge;
  return o;
}

// The bf16 fixture `model`, or Llama's with its dtype renamed to float16.
std::unique_ptr<Graph> fixture(const std::string& model) {
  if (model != "llama_fp16") return hf_fixture(model);
  return hf_fixture_at_float16("llama_bf16", model);
}

TEST(HfGroupedProduct, FixturesBitwiseWithAndWithoutTheMerge) {
  // Products of two layers: one q/k/v product each (three apart), and the LM head (Gemma's gate
  // and up are its GeGLU's gated_mlp: hf_gated_forms_test).
  struct Case {
    const char* model;
    int merged, apart;
  };
  for (const Case& c :
       {Case{"llama_bf16", 2, 0}, Case{"mistral_bf16", 2, 0}, Case{"gemma_bf16", 2, 0},
        Case{"llama_fp16", 2, 0}, Case{"qwen2_bf16", 2, 0}}) {
    SCOPED_TRACE(c.model);
    auto g = fixture(c.model);
    std::vector<std::vector<Tensor>> draws;
    for (uint32_t s : {0u, 1u, 17u, 30u, 46u, 63u}) draws.push_back(seeded_hf_inputs(*g, s, 64));
    const CompiledOnce merged(*g, draws[1], gpu_like(true)), apart(*g, draws[1], gpu_like(false));
    EXPECT_EQ(count_of(merged.plan(), "_merged_normed = rms_norm_linear("), c.merged)
        << merged.plan();
    EXPECT_EQ(count_of(merged.plan(), "= rms_norm_linear("), c.merged + 1) << merged.plan();
    EXPECT_EQ(count_of(apart.plan(), "= rms_norm_linear("), 3 * 2 + c.apart + 1) << apart.plan();
    for (size_t d = 0; d < draws.size(); ++d) {
      SCOPED_TRACE(str_cat("draw ", d));
      const EngineCall a = merged.call(draws[d]), b = apart.call(draws[d]);
      ASSERT_EQ(a.outputs.size(), b.outputs.size());
      for (size_t j = 0; j < a.outputs.size(); ++j)
        EXPECT_TRUE(tensor_equal(a.outputs[j], b.outputs[j])) << "output " << j;
      for (size_t i = 0; i < a.inputs.size(); ++i)
        EXPECT_TRUE(tensor_equal(a.inputs[i], b.inputs[i])) << "input " << i;
    }
  }
}

// The steps of a plan that launch work (views are refreshed, not run).
int launched_steps(const std::string& plan) {
  std::istringstream in(plan.substr(plan.find("steps:\n") + 7));
  int n = 0;
  for (std::string line; std::getline(in, line) && line.rfind("  ", 0) == 0;)
    n += line.find("[view, refresh only]") == std::string::npos;
  return n;
}

// Qwen2's biases ride in its grouped q/k/v product: its two layers take as many steps as Llama's
// (the fixtures differ only in those biases and in the casts of the rotary's inputs, which fold).
TEST(HfGroupedProduct, Qwen2TakesLlamasSteps) {
  std::string plans[2];
  int steps[2];
  for (int i = 0; i < 2; ++i) {
    auto g = hf_fixture(i ? "qwen2_bf16" : "llama_bf16");
    plans[i] = compile(*g, seeded_hf_inputs(*g, 1, 64), gpu_like(true)).engine->describe();
    steps[i] = launched_steps(plans[i]);
  }
  EXPECT_EQ(steps[1], steps[0]) << plans[1] << "\n" << plans[0];
  EXPECT_EQ(count_of(plans[1], "_merged_normed = rms_norm_linear("), 2) << plans[1];
}

// The float32 fixtures' weights are float32: no GEMV of the family reads them, nothing merges.
TEST(HfGroupedProduct, Float32FixturesKeepTheirProducts) {
  for (const char* model : {"llama", "mistral"}) {
    auto g = hf_fixture(model);
    const std::string plan =
        compile(*g, seeded_hf_inputs(*g, 1, 64), gpu_like(true)).engine->describe();
    EXPECT_EQ(count_of(plan, "merged"), 0) << model << "\n" << plan;
  }
}

}  // namespace
}  // namespace inplace::testing
