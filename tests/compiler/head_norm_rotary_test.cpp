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

// Qwen3 as torch.export records it (tests/frontend/fixtures/hf/qwen3_bf16.json, tiny, 2 layers,
// a cache of 64): every layer's q and k become rms_norm_rotary steps (one a layer with the GPU's
// fusion choices, where they read one product), bitwise the graph without the rewrite at
// positions across the cache.
TEST(HeadNormRotary, Qwen3AsTorchExportRecordsIt) {
  for (const char* model : {"qwen3_bf16", "qwen3_fp16"}) {
    SCOPED_TRACE(model);
    auto g = std::string(model) == "qwen3_bf16" ? hf_fixture(model)
                                                : hf_fixture_at_float16("qwen3_bf16", model);
    const auto example = seeded_hf_inputs(*g, 5, 64);
    std::vector<std::vector<Tensor>> draws;
    for (uint32_t seed = 0; seed < 64; seed += 9) draws.push_back(seeded_hf_inputs(*g, seed, 64));
    draws.push_back(seeded_hf_inputs(*g, 63, 64));
    for (bool gpu : {false, true}) {
      SCOPED_TRACE(gpu ? "the GPU's fusion choices" : "the cpu's");
      CompiledOnce fused(*g, example, gpu ? gpu_like_options() : CompileOptions{}),
          unfused(
              *g, example, gpu ? gpu_like_options({"fuse_head_norm_rotary"}) : [] {
                CompileOptions o;
                o.skip_passes = {"fuse_head_norm_rotary"};
                return o;
              }());
      // With the GPU's choices q, k and v are one product, so a layer's q and k heads are
      // adjacent columns of it: one step (the cpu keeps three products: two steps a layer).
      EXPECT_EQ(count_of(fused.plan(), "= rms_norm_rotary("), gpu ? 2 : 4) << fused.plan();
      EXPECT_EQ(count_of(fused.plan(), "= rotary_embedding("), 0) << fused.plan();
      expect_engines_equal(fused, unfused, draws, 0.0);
    }
    EXPECT_EQ(expect_engine_exact_on_draws(*g, example, draws, 0.0),
              static_cast<int>(draws.size()));
  }
}

// Gemma 3 as torch.export records it (tests/frontend/fixtures/hf/gemma3_bf16.json, tiny, 2
// layers): its norms after attention and after the MLP and its q and k norms weigh by
// 1 + w.to(float32) of the model's own weight; fuse_norm_weight_offsets has each such norm read w
// (weight_offset 1.0) instead of a pointwise step computing the weight each call: bitwise the
// graph without the rewrite (the cpu's and the GPU's fusion choices), at bf16 and fp16.
TEST(NormWeightOffsets, Gemma3NormsReadTheirOwnWeightBitwise) {
  for (const char* model : {"gemma3_bf16", "gemma3_fp16"}) {
    SCOPED_TRACE(model);
    auto g = std::string(model) == "gemma3_bf16" ? hf_fixture(model)
                                                 : hf_fixture_at_float16("gemma3_bf16", model);
    const auto example = seeded_hf_inputs(*g, 5, 64);
    std::vector<std::vector<Tensor>> draws;
    for (uint32_t seed = 0; seed < 64; seed += 9) draws.push_back(seeded_hf_inputs(*g, seed, 64));
    draws.push_back(seeded_hf_inputs(*g, 63, 64));
    for (bool gpu : {false, true}) {
      SCOPED_TRACE(gpu ? "the GPU's fusion choices" : "the cpu's");
      CompiledOnce fused(*g, example, gpu ? gpu_like_options() : CompileOptions{}),
          unfused(
              *g, example, gpu ? gpu_like_options({"fuse_norm_weight_offsets"}) : [] {
                CompileOptions o;
                o.skip_passes = {"fuse_norm_weight_offsets"};
                return o;
              }());
      // No step computes a norm's weight: every 1 + w is read by its norm.
      EXPECT_EQ(lines_with(fused.plan(), "= fused_pointwise(", "[64]:float32"), 0) << fused.plan();
      EXPECT_EQ(count_of(fused.plan(), "= rms_norm_rotary("), gpu ? 2 : 4) << fused.plan();
      EXPECT_GE(lines_with(unfused.plan(), "= fused_pointwise(", "[16]:float32"), 2)
          << unfused.plan();
      expect_engines_equal(fused, unfused, draws, 0.0);
    }
    EXPECT_EQ(expect_engine_exact_on_draws(*g, example, draws, 0.0),
              static_cast<int>(draws.size()));
  }
}

// And its two residual adds of a normalised output a layer (after attention, after the MLP):
// fuse_norm_residuals makes each add and its norm one upcast_rms_norm step with the residual,
// bitwise the graph without the rewrite, with the cpu's and the GPU's fusion choices.
TEST(NormResiduals, Gemma3NormsAndResidualAddsAreOneStepBitwise) {
  for (const char* model : {"gemma3_bf16", "gemma3_fp16"}) {
    SCOPED_TRACE(model);
    auto g = std::string(model) == "gemma3_bf16" ? hf_fixture(model)
                                                 : hf_fixture_at_float16("gemma3_bf16", model);
    const auto example = seeded_hf_inputs(*g, 5, 64);
    std::vector<std::vector<Tensor>> draws;
    for (uint32_t seed = 0; seed < 64; seed += 9) draws.push_back(seeded_hf_inputs(*g, seed, 64));
    draws.push_back(seeded_hf_inputs(*g, 63, 64));
    for (bool gpu : {false, true}) {
      SCOPED_TRACE(gpu ? "the GPU's fusion choices" : "the cpu's");
      CompiledOnce fused(*g, example, gpu ? gpu_like_options() : CompileOptions{}),
          unfused(
              *g, example, gpu ? gpu_like_options({"fuse_norm_residuals"}) : [] {
                CompileOptions o;
                o.skip_passes = {"fuse_norm_residuals"};
                return o;
              }());
      // (the other adds are the cumulative lengths', of int64 scalars)
      EXPECT_EQ(lines_with(fused.plan(), "= add.Tensor(", "[1,1,64]"), 0) << fused.plan();
      EXPECT_EQ(lines_with(unfused.plan(), "= add.Tensor(", "[1,1,64]"), 4) << unfused.plan();
      expect_engines_equal(fused, unfused, draws, 0.0);
    }
  }
}

}  // namespace
}  // namespace inplace::testing
