// fuse_rotary_epilogues at bfloat16 and float16: a rotary of a half dtype joins its q/k/v
// product's step (rms_norm_linear's cos, sin, rotary_cols), the product's rounded result rotated
// with the rotary's own rounding points. Proved bitwise on the cpu: each graph is compiled once
// with the GPU's fusion preferences (the q/k/v merge and the norm prologues on, no
// fuse_pointwise) and once more without fuse_rotary_epilogues, and both run on fresh draws of
// every input (weights, tables, cache contents, positions across the whole cache); every
// output and the final contents of every cache must be equal. The graphs: the Hugging Face bf16
// fixtures (three q/k/v products a layer, so each of q and k rotates in its own product) and a
// layer at decode shape (16 q heads, 4 kv heads, d 64 and 128) with three products or one fused
// q/k/v product, at bfloat16 and float16.
#include <gtest/gtest.h>

#include "compiler/hf_fixtures.h"
#include "compiler/qkv_rotary_graph.h"
#include "compiler/rewrite_differential.h"

namespace inplace::testing {
namespace {

CompileOptions gpu_preferences(bool epilogues) {
  CompileOptions o;
  o.merge_sibling_linears = true;
  o.fuse_norm_prologues = true;
  o.skip_passes = {"fuse_pointwise"};
  if (!epilogues) o.skip_passes.push_back("fuse_rotary_epilogues");
  return o;
}

// The engine with the rotary epilogues against the one without, on every draw; returns the
// plan of the first.
std::string expect_epilogues_exact(const Graph& g, const std::vector<std::vector<Tensor>>& draws) {
  CompiledOnce with(g, draws[0], gpu_preferences(true)),
      without(g, draws[0], gpu_preferences(false));
  for (size_t d = 0; d < draws.size(); ++d) {
    SCOPED_TRACE(str_cat("draw ", d));
    EngineCall a = with.call(draws[d]), b = without.call(draws[d]);
    EXPECT_EQ(a.outputs.size(), b.outputs.size());
    for (size_t j = 0; j < std::min(a.outputs.size(), b.outputs.size()); ++j)
      EXPECT_TRUE(tensor_equal(a.outputs[j], b.outputs[j], 0)) << "output " << j;
    for (size_t i = 0; i < a.inputs.size(); ++i)
      EXPECT_TRUE(tensor_equal(a.inputs[i], b.inputs[i], 0)) << "input " << i;
  }
  const std::string unfused = without.plan();
  EXPECT_GT(count_of(unfused, "= rotary_embedding("), 0) << unfused;
  return with.plan();
}

TEST(HalfRotaryEpilogue, HfBf16FixturesBitwiseWithAndWithoutTheEpilogues) {
  for (const char* model : {"llama", "mistral", "gemma"}) {
    SCOPED_TRACE(model);
    auto g = hf_fixture(std::string(model) + "_bf16");
    const std::string plan = expect_epilogues_exact(*g, rotary_draws_across(*g, 64));
    EXPECT_EQ(count_of(plan, "= rotary_embedding("), 0) << plan;
  }
}

// The cuda plan of the fixtures (CUDA's preferences, compiled for the cpu kernel table: the same
// steps) keeps no bf16 rotary step: q and k rotate in their products' epilogues.
TEST(HalfRotaryEpilogue, HfBf16CudaPlansKeepNoRotaryStep) {
  for (const char* model : {"llama", "mistral", "gemma"}) {
    SCOPED_TRACE(model);
    auto g = hf_fixture(std::string(model) + "_bf16");
    const std::string plan = CompiledOnce(*g, rotary_draw(*g, 3, 7), gpu_preferences(true)).plan();
    EXPECT_EQ(count_of(plan, "= rotary_embedding("), 0) << plan;
  }
}

TEST(HalfRotaryEpilogue, DecodeShapesBothProductFormsBothHalfDtypes) {
  for (DType dt : {DType::kBFloat16, DType::kFloat16})
    for (int64_t d : {64, 128})
      for (bool merged : {false, true}) {
        SCOPED_TRACE(str_cat(dtype_name(dt), " d ", d, merged ? " one q/k/v product" : ""));
        QkvShape s;
        s.dtype = dt;
        s.d = d;
        s.merged = merged;
        auto g = qkv_rotary_graph(s);
        const std::vector<std::vector<Tensor>> draws = rotary_draws_across(*g, s.s_max);
        const std::string plan = expect_epilogues_exact(*g, draws);
        EXPECT_EQ(count_of(plan, "= rotary_embedding("), 0) << plan;
        // Three products of input weights are grouped into one (merge_sibling_linears) too.
        EXPECT_EQ(count_of(plan, "= rms_norm_linear("), 1) << plan;
        // And the fused engine (aliased, copy-back, saved and loaded) is the eager interpreter's
        // chain, bitwise.
        EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 0, gpu_preferences(true)),
                  static_cast<int>(draws.size()));
      }
}

}  // namespace
}  // namespace inplace::testing
