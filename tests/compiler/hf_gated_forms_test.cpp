// The gated MLPs and fused q/k/v products of Hugging Face decoders that do not spell them as
// Llama does, reaching Llama's fused ops: Phi-3's gate_up_proj (one product whose halves feed
// silu(gate) * up) becomes gated_mlp over the weight's row halves (views of the caller's weight,
// not copies), its qkv_proj's rotary joins the product's epilogue; Gemma's GeGLU
// (gelu(gate, approximate='tanh') * up) becomes gated_mlp with activation gelu_tanh. Proved on
// the torch.export fixtures (phi3_bf16.json derived from phi3.json by derive_bf16.py) and on
// small graphs of every spelling at float32 (bf16 weights) and bf16: each compiled once with and
// once without the rewrites, run on fresh draws (weights, tokens, positions across the whole
// cache, cache contents); every output and the final contents of every cache are bitwise equal,
// and bitwise the eager interpreter's.
#include <gtest/gtest.h>

#include "compiler/hf_fixtures.h"
#include "compiler/rewrite_differential.h"
#include "frontend/graph_json.h"

namespace inplace::testing {
namespace {

CompileOptions cpu(std::vector<std::string> skipped = {}) {
  CompileOptions o;
  o.skip_passes = std::move(skipped);
  return o;
}

const std::vector<std::string> kRewrites = {"fuse_linear_epilogues", "fuse_rotary_epilogues"};

// Draws whose positions cover the cache (64 slots): first, last and between.
std::vector<std::vector<Tensor>> hf_draws(const Graph& g) {
  std::vector<std::vector<Tensor>> draws;
  for (uint32_t s : {0u, 1u, 31u, 46u, 63u, 64u + 17u}) draws.push_back(seeded_hf_inputs(g, s, 64));
  return draws;
}

// The engines with and without `skipped` give bitwise the same outputs and inputs after the call
// (the caches) on every draw.
void expect_same_with_and_without(const Graph& g, const std::vector<std::vector<Tensor>>& draws,
                                  const CompileOptions& with, const CompileOptions& without) {
  const CompiledOnce a_engine(g, draws[0], with), b_engine(g, draws[0], without);
  for (size_t d = 0; d < draws.size(); ++d) {
    SCOPED_TRACE(str_cat("draw ", d));
    const EngineCall a = a_engine.call(draws[d]), b = b_engine.call(draws[d]);
    ASSERT_EQ(a.outputs.size(), b.outputs.size());
    for (size_t j = 0; j < a.outputs.size(); ++j)
      EXPECT_TRUE(tensor_equal(a.outputs[j], b.outputs[j])) << "output " << j;
    for (size_t i = 0; i < a.inputs.size(); ++i)
      EXPECT_TRUE(tensor_equal(a.inputs[i], b.inputs[i])) << "input " << i;
  }
}

// Steps of a plan (describe()'s numbered lines).
int steps_of(const std::string& plan) {
  return lines_with(plan, ": ", " = ") - lines_with(plan, "  s", " = ");
}

TEST(HfGatedForms, Phi3Bf16ReachesLlamasStepsPerLayer) {
  auto phi3 = hf_fixture("phi3_bf16"), llama = hf_fixture("llama_bf16");
  const std::string plan =
      compile(*phi3, seeded_hf_inputs(*phi3, 1, 64), gpu_like_options()).engine->describe();
  const std::string llama_plan =
      compile(*llama, seeded_hf_inputs(*llama, 1, 64), gpu_like_options()).engine->describe();
  // Per layer: the norm + q/k/v product with its rotary, the norm + gated MLP, o and down with
  // their residuals; the LM head with the final norm. Nothing of the chains is left.
  EXPECT_EQ(count_of(plan, "_swiglu_normed = rms_norm_gated_mlp("), 2) << plan;
  EXPECT_EQ(count_of(plan, "= rms_norm_linear("), 3) << plan;
  EXPECT_EQ(count_of(plan, "= fused_linear("), 4) << plan;
  for (const char* gone : {"rotary_embedding", "silu", "= chunk", "mul_10_fused", "= copy"})
    EXPECT_EQ(count_of(plan, gone), 0) << gone << "\n" << plan;
  // The gate and up weights are the caller's gate_up_proj weight [256, 64] where it lies: rows
  // 0..127 and 128..255 (8192 elements on), no copy.
  EXPECT_EQ(lines_with(plan, "input3[128,64]:bfloat16, input3+8192[128,64]:bfloat16", "gated"), 1)
      << plan;
  EXPECT_EQ(count_of(plan, "weight_bytes: 0"), 1) << plan;
  EXPECT_EQ(steps_of(plan), steps_of(llama_plan)) << plan << "\n" << llama_plan;
}

TEST(HfGatedForms, Phi3Bf16BitwiseWithAndWithoutTheRewritesAndEager) {
  auto g = hf_fixture("phi3_bf16");
  const auto draws = hf_draws(*g);
  {
    SCOPED_TRACE("gpu's fusions");
    expect_same_with_and_without(*g, draws, gpu_like_options(), gpu_like_options(kRewrites));
    EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 0, gpu_like_options()), 6);
  }
  {
    SCOPED_TRACE("cpu's fusions");
    const std::string plan = compile(*g, clones(draws[0]), cpu()).engine->describe();
    EXPECT_EQ(count_of(plan, "_swiglu = gated_mlp("), 2) << plan;
    expect_same_with_and_without(*g, draws, cpu(), cpu({"fuse_linear_epilogues"}));
    EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 0, cpu()), 6);
  }
}

TEST(HfGatedForms, GemmaGeGluIsOneGatedStep) {
  for (const char* model : {"gemma_bf16"}) {
    SCOPED_TRACE(model);
    auto g = hf_fixture(model);
    const auto draws = hf_draws(*g);
    const std::string plan = compile(*g, clones(draws[0]), gpu_like_options()).engine->describe();
    EXPECT_EQ(count_of(plan, "_geglu_normed = rms_norm_gated_mlp("), 2) << plan;
    EXPECT_EQ(count_of(plan, "= gelu"), 0) << plan;
    EXPECT_EQ(lines_with(plan, "fused_pointwise(", "[1,1,128]"), 0) << plan;  // act(gate) * up
    expect_same_with_and_without(*g, draws, gpu_like_options(), gpu_like_options(kRewrites));
    EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 0, gpu_like_options()), 6);
    const std::string cpu_plan = compile(*g, clones(draws[0]), cpu()).engine->describe();
    EXPECT_EQ(count_of(cpu_plan, "_geglu = gated_mlp("), 2) << cpu_plan;
    expect_same_with_and_without(*g, draws, cpu(), cpu({"fuse_linear_epilogues"}));
    EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 0, cpu()), 6);
  }
}

// Gemma's RMSNorm weight 1 + w.to(float32) (a cast and an add per norm, one fused_pointwise
// launch each: two a layer and the final norm's) joins its norm form (norm=
// "upcast_one_plus_weight", reading the model's bf16 w): Gemma's plan is Llama's, step for step,
// but for its embedding's scale. Bitwise the engine without the norm prologues (each norm its own
// upcast_rms_norm step after the cast and the add) and the eager interpreter, on fresh draws of
// every input with positions across the cache.
TEST(HfGatedForms, GemmaNormWeightJoinsItsNormForm) {
  auto g = hf_fixture("gemma_bf16"), llama = hf_fixture("llama_bf16");
  const auto draws = hf_draws(*g);
  const std::string plan = compile(*g, clones(draws[0]), gpu_like_options()).engine->describe();
  const std::string llama_plan =
      compile(*llama, seeded_hf_inputs(*llama, 1, 64), gpu_like_options()).engine->describe();
  EXPECT_EQ(lines_with(plan, "= fused_pointwise(", "[64]:float32"), 0) << plan;
  EXPECT_EQ(lines_with(plan, "_normed = rms_norm_", "[64]:bfloat16"), 5) << plan;
  EXPECT_EQ(steps_of(plan), steps_of(llama_plan) + 1) << plan << "\n" << llama_plan;
  // The embedding's scale (the rotary's products stay steps of their own in a build without the
  // cuda backend's pointwise fusion, in both plans).
  EXPECT_EQ(count_of(plan, "= mul.Tensor("), count_of(llama_plan, "= mul.Tensor(") + 1) << plan;
  CompileOptions apart = gpu_like_options();
  apart.fuse_norm_prologues = false;
  expect_same_with_and_without(*g, draws, gpu_like_options(), apart);
  EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 0, gpu_like_options()), 6);
}

// The float32 fixtures' weights are float32: no product of the family reads them (as Llama's),
// so nothing changes: bitwise the engine without the rewrites, eager within the float32 norm's
// rounding (fuse_rms_norm's statistics in double).
TEST(HfGatedForms, Float32FixturesAreUnchanged) {
  for (const char* model : {"phi3", "gemma"}) {
    SCOPED_TRACE(model);
    auto g = hf_fixture(model);
    const auto draws = hf_draws(*g);
    const std::string plan = compile(*g, clones(draws[0]), gpu_like_options()).engine->describe();
    EXPECT_EQ(count_of(plan, "gated_mlp"), 0) << plan;
    expect_same_with_and_without(*g, draws, gpu_like_options(), gpu_like_options(kRewrites));
    EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 1e-4, gpu_like_options()), 6);
  }
}

// ---- every spelling, on a small graph: y = act(gate) * up of one product's halves.

struct Form {
  const char* split;  // chunk, split, split_with_sizes, slice
  const char* act;    // silu, gelu_tanh
  bool gate_second;   // the gate is the second half
  bool act_first;     // mul(act, up) rather than mul(up, act)
};

constexpr int64_t kK = 32, kHalf = 24;

// Forms the rewrite leaves alone.
enum class Variant { kNone, kExactGelu, kHalfReadTwice, kBias };

std::string node(const std::string& name, const std::string& target, const std::string& args,
                 const std::string& kwargs = "{}") {
  return str_cat(R"(, {"name": ")", name, R"(", "op": "call_function", "target": ")", target,
                 R"(", "args": )", args, R"(, "kwargs": )", kwargs, "}");
}

// x [1, rows, kK] of x_dtype, w [2 * kHalf, kK] bf16; the product as fuse_weight_casts leaves it
// (fused_linear at float32, linear at bf16).
std::unique_ptr<Graph> gated_graph(const Form& f, DType x_dtype, int64_t rows,
                                   Variant variant = Variant::kNone) {
  const std::string xd = dtype_name(x_dtype);
  std::string nodes = str_cat(
      R"({"name": "x", "op": "placeholder", "target": "x", "args": [], "kwargs": {}, "meta": )",
      R"({"shape": [1, )", rows, ", ", kK, R"(], "dtype": ")", xd, R"("}}, {"name": "w", "op": )",
      R"("placeholder", "target": "w", "args": [], "kwargs": {}, "meta": {"shape": [)", 2 * kHalf,
      ", ", kK, R"(], "dtype": "bfloat16"}})");
  std::string bias;
  if (variant == Variant::kBias) {
    nodes += str_cat(R"(, {"name": "bias", "op": "placeholder", "target": "bias", "args": [], )",
                     R"("kwargs": {}, "meta": {"shape": [)", 2 * kHalf, R"(], "dtype": ")", xd,
                     R"("}})");
    bias = R"(, {"node": "bias"})";
  }
  nodes += node("p", x_dtype == DType::kFloat32 ? "inplace.fused_linear" : "aten.linear.default",
                str_cat(R"([{"node": "x"}, {"node": "w"})", bias, "]"));
  const std::string split = f.split;
  std::string a = "a", b = "b";
  if (split == "slice") {
    nodes += node("a", "aten.slice.Tensor", str_cat(R"([{"node": "p"}, -1, 0, )", kHalf, "]"));
    nodes += node("b", "aten.slice.Tensor",
                  str_cat(R"([{"node": "p"}, 2, )", kHalf, ", 9223372036854775807]"));
  } else {
    const std::string by = split == "chunk"   ? "2"
                           : split == "split" ? str_cat(kHalf)
                                              : str_cat("[", kHalf, ", ", kHalf, "]");
    const std::string target = split == "chunk"   ? "aten.chunk.default"
                               : split == "split" ? "aten.split.Tensor"
                                                  : "aten.split_with_sizes.default";
    nodes += node("halves", target, str_cat(R"([{"node": "p"}, )", by, ", -1]"));
    nodes += node("a", "_operator.getitem", R"([{"node": "halves"}, 0])");
    nodes += node("b", "_operator.getitem", R"([{"node": "halves"}, 1])");
  }
  const std::string gate = f.gate_second ? b : a, up = f.gate_second ? a : b;
  if (std::string(f.act) == "silu")
    nodes += node("act", "aten.silu.default", str_cat(R"([{"node": ")", gate, R"("}])"));
  else
    nodes += node("act", "aten.gelu.default", str_cat(R"([{"node": ")", gate, R"("}])"),
                  variant == Variant::kExactGelu ? R"({"approximate": "none"})"
                                                 : R"({"approximate": "tanh"})");
  const std::string up_ref = str_cat(R"({"node": ")", up, R"("})"), act_ref = R"({"node": "act"})";
  nodes += node("y", "aten.mul.Tensor",
                f.act_first ? str_cat("[", act_ref, ", ", up_ref, "]")
                            : str_cat("[", up_ref, ", ", act_ref, "]"));
  nodes += str_cat(R"(, {"name": "output", "op": "output", "target": "output", "args": )",
                   R"([{"tuple": [{"node": "y"})",
                   variant == Variant::kHalfReadTwice ? R"(, {"node": "a"})" : "",
                   R"(]}], "kwargs": {}})");
  return read_graph_json_string(
      str_cat(R"({"format": "inplace.graph", "version": 1, "name": "gated", "nodes": [)", nodes,
              R"(], "constants": {}})"),
      "gated");
}

std::vector<std::vector<Tensor>> small_draws(const Graph& g) {
  std::vector<std::vector<Tensor>> draws;
  for (uint32_t s = 1; s <= 4; ++s) {
    std::vector<Tensor> in;
    for (Node* p : g.placeholders())  // x, w in [-1, 1]: gate values over a few units
      in.push_back(seeded_uniform(*p->meta.shape, s * 41 + static_cast<uint32_t>(in.size()))
                       .to(*p->meta.dtype));
    draws.push_back(in);
  }
  return draws;
}

TEST(HfGatedForms, EverySpellingOfOneProductsHalvesIsOneGatedStep) {
  int cases = 0;
  for (const char* split : {"chunk", "split", "split_with_sizes", "slice"})
    for (const char* act : {"silu", "gelu_tanh"})
      for (bool gate_second : {false, true})
        for (bool act_first : {false, true})
          for (DType dt : {DType::kFloat32, DType::kBFloat16})
            for (int64_t rows : {1, 3}) {
              const Form f{split, act, gate_second, act_first};
              SCOPED_TRACE(str_cat(split, " ", act, gate_second ? " gate second" : "",
                                   act_first ? " act first" : "", " ", dtype_name(dt), " ", rows,
                                   " rows"));
              auto g = gated_graph(f, dt, rows);
              const auto draws = small_draws(*g);
              const std::string plan = compile(*g, clones(draws[0]), cpu()).engine->describe();
              EXPECT_EQ(count_of(plan, " = gated_mlp(input0[1,"), 1) << plan;
              EXPECT_EQ(steps_of(plan), 1) << plan;
              // gate and up: w's rows [0, 24) and [24, 48) (768 elements on), as the gate reads.
              EXPECT_EQ(count_of(plan, gate_second ? "input1+768[24,32]:bfloat16, input1[24,32]"
                                                   : "input1[24,32]:bfloat16, input1+768[24,32]"),
                        1)
                  << plan;
              expect_same_with_and_without(*g, draws, cpu(), cpu({"fuse_linear_epilogues"}));
              EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 0, cpu()), 4);
              ++cases;
            }
  EXPECT_EQ(cases, 128);
}

TEST(HfGatedForms, OtherFormsKeepTheirSteps) {
  // gelu without the tanh approximation; a half the output reads too; halves of a product with
  // a bias: each keeps the chain (and stays eager bitwise).
  for (Variant v : {Variant::kExactGelu, Variant::kHalfReadTwice, Variant::kBias}) {
    SCOPED_TRACE(static_cast<int>(v));
    auto g = gated_graph({"chunk", v == Variant::kExactGelu ? "gelu_tanh" : "silu", false, false},
                         DType::kFloat32, 1, v);
    const auto draws = small_draws(*g);
    const std::string plan = compile(*g, clones(draws[0]), cpu()).engine->describe();
    EXPECT_EQ(count_of(plan, "gated_mlp"), 0) << plan;
    EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 0, cpu()), 4);
  }
}

}  // namespace
}  // namespace inplace::testing
