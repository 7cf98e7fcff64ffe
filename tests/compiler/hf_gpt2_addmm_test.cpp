// GPT-2's Conv1D products (addmm over a weight stored [in, out], the caller's) as fused_addmm
// steps (the fuse_addmm pass): each layer's four products take their bias, the residual adds
// after c_proj and the MLP's c_proj, and (with the GPU's norm prologues) ln_1 and ln_2 before
// c_attn and c_fc, and the GELU-tanh after c_fc (fuse_product_epilogues). Proved bitwise on the
// cpu: each fixture (float32 and bf16) is compiled once with the rewrite and once without, and both
// run on fresh draws (weights, tokens, positions across the whole cache, cache contents); every
// output and the final contents of every cache must be equal.
#include <gtest/gtest.h>

#include <cstdlib>

#include "compiler/hf_fixtures.h"
#include "compiler/rewrite_differential.h"
#include "engine/engine_file.h"
#include "engine/execution_context.h"

namespace inplace::testing {
namespace {

CompileOptions options(bool rewrite, bool norm_prologues) {
  CompileOptions o;
  o.fuse_norm_prologues = norm_prologues;
  o.prepare_weights = false;  // the weights as they lie, as a GPU engine reads them
  if (!rewrite) o.skip_passes = {"fuse_addmm"};
  return o;
}

TEST(HfGpt2Addmm, FixturesBitwiseWithAndWithoutTheRewrite) {
  for (const char* model : {"gpt2", "gpt2_bf16"})
    for (bool norms : {false, true}) {
      SCOPED_TRACE(str_cat(model, norms ? ", norm prologues" : ""));
      auto g = hf_fixture(model);
      std::vector<std::vector<Tensor>> draws;
      for (uint32_t s : {0u, 1u, 17u, 30u, 46u, 63u}) draws.push_back(seeded_hf_inputs(*g, s, 64));
      const CompiledOnce fused(*g, draws[1], options(true, norms)),
          chain(*g, draws[1], options(false, norms));
      // Two layers of four products: c_attn, attn.c_proj (+ residual), c_fc, mlp.c_proj (+
      // residual); ln_1 and ln_2 join c_attn and c_fc; ln_f stays (the LM head's own norm: a
      // LayerNorm joins a linear only where weights are prepared).
      const std::string plan = fused.plan();
      EXPECT_EQ(count_of(plan, "= fused_addmm("), 8) << plan;
      EXPECT_EQ(count_of(plan, "= addmm("), 0) << plan;
      EXPECT_EQ(count_of(plan, "= layer_norm("), norms ? 1 : 5) << plan;
      EXPECT_EQ(count_of(chain.plan(), "= addmm("), 8) << chain.plan();
      // The GELU-tanh chain after c_fc: one fused_pointwise step, then c_fc's epilogue.
      EXPECT_EQ(count_of(plan, "= fused_pointwise("), 0) << plan;
      EXPECT_EQ(count_of(chain.plan(), "= fused_pointwise("), 2) << chain.plan();
      // The residual adds: only the embeddings' sum remains.
      EXPECT_EQ(lines_with(plan, "= add.Tensor(", "bfloat16") +
                    lines_with(plan, "= add.Tensor(", "float32"),
                1)
          << plan;
      for (size_t d = 0; d < draws.size(); ++d) {
        SCOPED_TRACE(str_cat("draw ", d));
        const EngineCall a = fused.call(draws[d]), b = chain.call(draws[d]);
        ASSERT_EQ(a.outputs.size(), b.outputs.size());
        for (size_t j = 0; j < a.outputs.size(); ++j)
          EXPECT_TRUE(tensor_equal(a.outputs[j], b.outputs[j])) << "output " << j;
        for (size_t i = 0; i < a.inputs.size(); ++i)
          EXPECT_TRUE(tensor_equal(a.inputs[i], b.inputs[i])) << "input " << i;
      }
    }
}

// INPLACE_FUSE_NORM_PROLOGUES (A/B profiles) decides the norm prologues where the options leave
// them open: 1 joins ln_1 and ln_2 on the cpu, 0 keeps them steps on a GPU's graph; an explicit
// option wins; any other value is refused, naming the variable.
TEST(HfGpt2Addmm, TheEnvironmentDecidesNormProloguesTheOptionsLeaveOpen) {
  auto g = hf_fixture("gpt2");
  const std::vector<Tensor> draw = seeded_hf_inputs(*g, 1, 64);
  auto norms_left = [&](const CompileOptions& o) {
    return count_of(CompiledOnce(*g, draw, o).plan(), "= layer_norm(");
  };
  CompileOptions open, gpu, set;
  open.prepare_weights = set.prepare_weights = false;  // the products stay fused_addmm
  gpu.fusion_device = DeviceType::kCuda;
  set.fuse_norm_prologues = false;
  ::setenv("INPLACE_FUSE_NORM_PROLOGUES", "1", 1);
  EXPECT_EQ(norms_left(open), 1);
  EXPECT_EQ(norms_left(set), 5);
  ::setenv("INPLACE_FUSE_NORM_PROLOGUES", "0", 1);
  EXPECT_EQ(norms_left(gpu), 5);
  ::setenv("INPLACE_FUSE_NORM_PROLOGUES", "yes", 1);
  try {
    norms_left(open);
    ADD_FAILURE() << "a bad value compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("INPLACE_FUSE_NORM_PROLOGUES='yes'"), std::string::npos)
        << e.what();
  }
  ::unsetenv("INPLACE_FUSE_NORM_PROLOGUES");
  EXPECT_EQ(norms_left(open), 5);
}

// An engine file keeps the fused steps (the norm prologue's eps, the epilogue's program): the
// loaded engine computes the compiled one's values bit for bit.
TEST(HfGpt2Addmm, EngineFilesKeepTheFusedSteps) {
  auto g = hf_fixture("gpt2_bf16");
  const std::vector<Tensor> draw = seeded_hf_inputs(*g, 21, 64);
  const CompiledProgram cp = compile(*g, clones(draw), options(true, true));
  const std::string bytes = serialize_engine(*cp.engine);
  const std::shared_ptr<const Engine> loaded = deserialize_engine(bytes, "<memory>");
  EXPECT_EQ(count_of(loaded->describe(), "= fused_addmm("), 8);
  auto run = [&](const std::shared_ptr<const Engine>& e) {
    const std::vector<Tensor> inputs = clones(draw);
    ExecutionContext ctx(e);
    for (int i = 0; i < cp.num_user_inputs; ++i) ctx.bind_input(i, inputs[i]);
    std::vector<Tensor> out = ctx.execute();
    out.insert(out.end(), inputs.begin(), inputs.end());
    return out;
  };
  const std::vector<Tensor> a = run(cp.engine), b = run(loaded);
  ASSERT_EQ(a.size(), b.size());
  for (size_t j = 0; j < a.size(); ++j) EXPECT_TRUE(tensor_equal(a[j], b[j])) << "value " << j;
}

// Spellings around the product: mm without a bias, reshape for view, the residual as the add's
// first operand, a LayerNorm without weight and bias, float16; bitwise with and without the
// rewrite. A prompt of eight rows keeps its products (the GEMV serves decode rows).
std::unique_ptr<Graph> spelled(int64_t rows, const std::string& dtype) {
  const std::string t = "\"" + dtype + "\"";
  auto meta = [&](const std::string& shape) {
    return "\"meta\": {\"shape\": " + shape + ", \"dtype\": " + t + "}";
  };
  const std::string r = std::to_string(rows);
  auto node = [](const std::string& name, const std::string& target, const std::string& args,
                 const std::string& m) {
    return "{\"name\": \"" + name + "\", \"op\": \"call_function\", \"target\": \"" + target +
           "\", \"args\": " + args + ", " + m + "},";
  };
  auto ref = [](const std::string& n) { return "{\"node\": \"" + n + "\"}"; };
  const std::string x3 = "[1, " + r + ", 16]", y3 = "[1, " + r + ", 24]";
  std::string json =
      "{\"format\": \"inplace.graph\", \"version\": 1, \"name\": \"spelled\", "
      "\"nodes\": [";
  for (const auto& [name, shape] : std::vector<std::pair<std::string, std::string>>{
           {"x", x3}, {"res", y3}, {"w1", "[16, 24]"}, {"w2", "[24, 24]"}, {"b2", "[24]"}})
    json += "{\"name\": \"" + name + "\", \"op\": \"placeholder\", \"target\": \"" + name +
            "\", \"args\": [], " + meta(shape) + "},";
  json += node("ln", "aten.layer_norm.default", "[" + ref("x") + ", [16], null, null, 1e-05]",
               meta(x3));
  json +=
      node("v", "aten.reshape.default", "[" + ref("ln") + ", [-1, 16]]", meta("[" + r + ", 16]"));
  json += node("p", "aten.mm.default", "[" + ref("v") + ", " + ref("w1") + "]",
               meta("[" + r + ", 24]"));
  json += node("pv", "aten.view.default", "[" + ref("p") + ", " + y3 + "]", meta(y3));
  json += node("h", "aten.add.Tensor", "[" + ref("res") + ", " + ref("pv") + "]", meta(y3));
  json += node("v2", "aten.view.default", "[" + ref("h") + ", [-1, 24]]", meta("[" + r + ", 24]"));
  json +=
      node("q", "aten.addmm.default", "[" + ref("b2") + ", " + ref("v2") + ", " + ref("w2") + "]",
           meta("[" + r + ", 24]"));
  // An activation after the second product: its epilogue program.
  json += node("act", "aten.tanh.default", "[" + ref("q") + "]", meta("[" + r + ", 24]"));
  json += node("out", "aten.mul.Tensor", "[" + ref("act") + ", 0.5]", meta("[" + r + ", 24]"));
  json += "{\"name\": \"output\", \"op\": \"output\", \"target\": \"output\", \"args\": [[" +
          ref("h") + ", " + ref("out") + "]]}]}";
  return read_graph_json_string(json, "spelled");
}

TEST(HfGpt2Addmm, OtherSpellingsBitwiseAndPromptsKeepTheirProducts) {
  for (const char* dtype : {"float32", "bfloat16", "float16"})
    for (int64_t rows : {1, 3, 8})
      for (bool norms : {false, true}) {
        SCOPED_TRACE(str_cat(dtype, ", ", rows, " rows", norms ? ", norm prologues" : ""));
        auto g = spelled(rows, dtype);
        std::vector<std::vector<Tensor>> draws;
        for (uint32_t s : {2u, 5u, 9u}) draws.push_back(seeded_hf_inputs(*g, s, 1));
        const CompiledOnce fused(*g, draws[0], options(true, norms)),
            chain(*g, draws[0], options(false, norms));
        const std::string plan = fused.plan();
        EXPECT_EQ(count_of(plan, "= fused_addmm("), rows <= 4 ? 2 : 0) << plan;
        EXPECT_EQ(count_of(plan, "= layer_norm("), rows <= 4 && norms ? 0 : 1) << plan;
        EXPECT_EQ(count_of(plan, "= fused_pointwise("), rows <= 4 ? 0 : 1) << plan;
        for (size_t d = 0; d < draws.size(); ++d) {
          SCOPED_TRACE(str_cat("draw ", d));
          const EngineCall a = fused.call(draws[d]), b = chain.call(draws[d]);
          ASSERT_EQ(a.outputs.size(), b.outputs.size());
          for (size_t j = 0; j < a.outputs.size(); ++j)
            EXPECT_TRUE(tensor_equal(a.outputs[j], b.outputs[j])) << "output " << j;
        }
      }
}

}  // namespace
}  // namespace inplace::testing
