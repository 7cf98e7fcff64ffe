// GPT-2 with its Conv1D weights prepared (prepare_in_out_weights: each product a linear over an
// [out, in] copy) and the GPU's norm prologues: ln_1, ln_2 and ln_f join the linears they feed
// (rms_norm_linear with norm="layer": fuse_norm_prologues) and the GELU-tanh after c_fc becomes
// that product's epilogue program (fuse_product_epilogues), the forms a GPU engine runs once
// it prepares weights. Proved bitwise on the cpu (which runs each form as its chain's kernels):
// each fixture (float32 and bf16) is compiled once with the forms and once without, and both
// run on fresh draws (weights, tokens, positions across the whole cache, cache contents); every
// output and the final contents of every cache must be equal.
#include <gtest/gtest.h>

#include "compiler/hf_fixtures.h"
#include "compiler/rewrite_differential.h"

namespace inplace::testing {
namespace {

CompileOptions options(bool norm_prologues, bool epilogues) {
  CompileOptions o;
  o.prepare_weights = true;
  o.fuse_norm_prologues = norm_prologues;
  if (!epilogues) o.skip_passes = {"fuse_product_epilogues"};
  return o;
}

void expect_equal_on_draws(const Graph& g, const CompiledOnce& a, const CompiledOnce& b) {
  for (uint32_t s : {0u, 1u, 17u, 30u, 46u, 63u}) {
    SCOPED_TRACE(str_cat("seed ", s));
    const std::vector<Tensor> draw = seeded_hf_inputs(g, s, 64);
    const EngineCall x = a.call(draw), y = b.call(draw);
    ASSERT_EQ(x.outputs.size(), y.outputs.size());
    for (size_t j = 0; j < x.outputs.size(); ++j)
      EXPECT_TRUE(tensor_equal(x.outputs[j], y.outputs[j])) << "output " << j;
    for (size_t i = 0; i < x.inputs.size(); ++i)
      EXPECT_TRUE(tensor_equal(x.inputs[i], y.inputs[i])) << "input " << i;
  }
}

// At a half dtype every LayerNorm joins its linear: ln_1 c_attn's, ln_2 c_fc's, ln_f the LM
// head's (through the view and alias before it). At float32 (float32 weights: a linear, which
// the GPU runs through cuBLAS, not the fused GEMV) they stay.
TEST(HfGpt2PreparedForms, LayerNormsJoinTheirLinearsBitwise) {
  for (const char* model : {"gpt2", "gpt2_bf16"}) {
    SCOPED_TRACE(model);
    const bool half = std::string(model) == "gpt2_bf16";
    auto g = hf_fixture(model);
    const std::vector<Tensor> example = seeded_hf_inputs(*g, 1, 64);
    const CompiledOnce joined(*g, example, options(true, true)),
        apart(*g, example, options(false, true));
    const std::string plan = joined.plan();
    EXPECT_EQ(count_of(plan, "= layer_norm("), half ? 0 : 5) << plan;
    EXPECT_EQ(count_of(plan, "= rms_norm_linear("), half ? 5 : 0) << plan;
    EXPECT_EQ(count_of(apart.plan(), "= layer_norm("), 5) << apart.plan();
    expect_equal_on_draws(*g, joined, apart);
  }
}

// The GELU-tanh (one fused_pointwise step after c_fc) becomes c_fc's epilogue at a half dtype,
// whether c_fc reads a LayerNorm prologue or not (at float32 c_fc is a linear: it stays).
TEST(HfGpt2PreparedForms, GeluJoinsTheLinearBeforeItBitwise) {
  for (const char* model : {"gpt2", "gpt2_bf16"})
    for (bool norms : {false, true}) {
      SCOPED_TRACE(str_cat(model, norms ? ", norm prologues" : ""));
      auto g = hf_fixture(model);
      const std::vector<Tensor> example = seeded_hf_inputs(*g, 1, 64);
      const CompiledOnce joined(*g, example, options(norms, true)),
          apart(*g, example, options(norms, false));
      const std::string plan = joined.plan();
      EXPECT_EQ(count_of(apart.plan(), "= fused_pointwise("), 2) << apart.plan();
      const bool half = std::string(model) == "gpt2_bf16";
      EXPECT_EQ(count_of(plan, "= fused_pointwise("), half ? 0 : 2) << plan;
      expect_equal_on_draws(*g, joined, apart);
    }
}

}  // namespace
}  // namespace inplace::testing
