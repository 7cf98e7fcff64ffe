// fuse_head_norm_rotary on a decoder whose q and k heads are RMS-normalised before the rotary
// (Qwen3's q_norm and k_norm; tests/compiler/fixtures/hf_style_qk_norm_make_fx_bf16.json, the
// Hugging Face-style decoder of python/bench/hf_style_cpu.py with --qk-norm, as inplace.compile
// captures it, bf16): each head's norm and its rotary become one rms_norm_rotary step, bitwise the
// two steps, on fresh tokens, weights and positions across the whole cache, compiled once (with
// the cpu's and the GPU's fusion choices), against the graph without the rewrite and the eager
// interpreter; and at float16. A norm that something else also reads stays.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "compiler/hf_fixtures.h"
#include "compiler/rewrite_differential.h"

namespace inplace::testing {
namespace {

constexpr int64_t kSMax = 32;  // the fixture's cache

std::string fixture_text(bool half) {
  std::ifstream in(std::string(INPLACE_SOURCE_DIR) +
                   "/tests/compiler/fixtures/hf_style_qk_norm_make_fx_bf16.json");
  std::stringstream text;
  text << in.rdbuf();
  std::string json = text.str();
  if (half)
    for (size_t at; (at = json.find("bfloat16")) != std::string::npos;)
      json.replace(at, 8, "float16");
  return json;
}

std::vector<std::vector<Tensor>> draws(const Graph& g) {
  std::vector<std::vector<Tensor>> out;
  for (uint32_t seed = 0; seed < kSMax; seed += 3) out.push_back(seeded_hf_inputs(g, seed, kSMax));
  out.push_back(seeded_hf_inputs(g, kSMax - 1, kSMax));
  return out;
}

TEST(HeadNormRotary, QkNormsAndRotariesBecomeOneStepBitwise) {
  for (bool half : {false, true}) {
    SCOPED_TRACE(half ? "float16" : "bfloat16");
    auto g = read_graph_json_string(fixture_text(half), "qk_norm");
    const auto example = seeded_hf_inputs(*g, 5, kSMax);
    std::string plan = expect_rewrite_exact(*g, example, draws(*g), {"fuse_head_norm_rotary"}, 0.0);
    EXPECT_EQ(count_of(plan, "= rms_norm_rotary("), 4) << plan;  // 2 layers, q and k
    EXPECT_EQ(count_of(plan, "= rotary_embedding("), 0) << plan;
    EXPECT_EQ(expect_engine_exact_on_draws(*g, example, draws(*g), 0.0),
              static_cast<int>(draws(*g).size()));
  }
}

TEST(HeadNormRotary, WithTheGpusFusionChoices) {
  auto g = read_graph_json_string(fixture_text(false), "qk_norm");
  const auto example = seeded_hf_inputs(*g, 5, kSMax);
  CompiledOnce fused(*g, example, gpu_like_options()),
      unfused(*g, example, gpu_like_options({"fuse_head_norm_rotary"}));
  EXPECT_EQ(count_of(fused.plan(), "= rms_norm_rotary("), 4) << fused.plan();
  expect_engines_equal(fused, unfused, draws(*g), 0.0);
}

// The bf16 fixture `model` (tests/frontend/fixtures/hf, tiny, 2 layers, a cache of 64) at bf16
// and fp16, compiled once with and once without `pass` (the cpu's and the GPU's fusion choices):
// `check(fused plan, unfused plan, gpu)`, then the two engines bitwise equal on fresh tokens,
// weights and positions across the cache, and the fused one the eager interpreter's.
template <typename Check>
void expect_rewrite_bitwise(const std::string& model, const std::string& pass, Check check) {
  for (const std::string& name : {model + "_bf16", model + "_fp16"}) {
    SCOPED_TRACE(name);
    auto g =
        name == model + "_bf16" ? hf_fixture(name) : hf_fixture_at_float16(model + "_bf16", name);
    const auto example = seeded_hf_inputs(*g, 5, 64);
    std::vector<std::vector<Tensor>> draws;
    for (uint32_t seed = 0; seed < 64; seed += 9) draws.push_back(seeded_hf_inputs(*g, seed, 64));
    draws.push_back(seeded_hf_inputs(*g, 63, 64));
    for (bool gpu : {false, true}) {
      SCOPED_TRACE(gpu ? "the GPU's fusion choices" : "the cpu's");
      CompileOptions without = gpu ? gpu_like_options({pass}) : CompileOptions{};
      if (!gpu) without.skip_passes = {pass};
      CompiledOnce fused(*g, example, gpu ? gpu_like_options() : CompileOptions{}),
          unfused(*g, example, without);
      check(fused.plan(), unfused.plan(), gpu);
      expect_engines_equal(fused, unfused, draws, 0.0);
    }
    EXPECT_EQ(expect_engine_exact_on_draws(*g, example, draws, 0.0),
              static_cast<int>(draws.size()));
  }
}

// Qwen3 as torch.export records it: every layer's q and k become rms_norm_rotary steps (one a
// layer with the GPU's fusion choices, where they read one product).
TEST(HeadNormRotary, Qwen3AsTorchExportRecordsIt) {
  expect_rewrite_bitwise("qwen3", "fuse_head_norm_rotary",
                         [](const std::string& plan, const std::string&, bool gpu) {
                           // With the GPU's choices q, k and v are one product, so a layer's q
                           // and k heads are adjacent columns of it: one step (the cpu keeps
                           // three products: two steps a layer).
                           EXPECT_EQ(count_of(plan, "= rms_norm_rotary("), gpu ? 2 : 4) << plan;
                           EXPECT_EQ(count_of(plan, "= rotary_embedding("), 0) << plan;
                         });
}

// Gemma 3: its norms after attention and after the MLP and its q and k norms weigh by
// 1 + w.to(float32) of the model's own weight; fuse_norm_weight_offsets has each such norm read w
// (weight_offset 1.0) instead of a pointwise step computing the weight each call.
TEST(NormWeightOffsets, Gemma3NormsReadTheirOwnWeightBitwise) {
  expect_rewrite_bitwise("gemma3", "fuse_norm_weight_offsets",
                         [](const std::string& plan, const std::string& unfused, bool gpu) {
                           // No step computes a norm's weight: every 1 + w is read by its norm.
                           // (a float32 [64] or [16] value is such a weight; fused_pointwise's step
                           // or the add's)
                           EXPECT_EQ(count_of(plan, "[64]:float32"), 0) << plan;
                           EXPECT_EQ(count_of(plan, "= rms_norm_rotary("), gpu ? 2 : 4) << plan;
                           EXPECT_GE(count_of(unfused, "[16]:float32"), 2) << unfused;
                         });
}

// And its two residual adds of a normalised output a layer (after attention, after the MLP):
// fuse_norm_residuals makes each add and its norm one upcast_rms_norm step with the residual.
TEST(NormResiduals, Gemma3NormsAndResidualAddsAreOneStepBitwise) {
  expect_rewrite_bitwise("gemma3", "fuse_norm_residuals",
                         [](const std::string& plan, const std::string& unfused, bool) {
                           // (the other adds are the cumulative lengths', of int64 scalars)
                           EXPECT_EQ(lines_with(plan, "= add.Tensor(", "[1,1,64]"), 0) << plan;
                           EXPECT_EQ(lines_with(unfused, "= add.Tensor(", "[1,1,64]"), 4)
                               << unfused;
                         });
}

}  // namespace
}  // namespace inplace::testing
