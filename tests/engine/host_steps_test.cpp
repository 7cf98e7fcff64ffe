// Steps on the host (Step::on_host): a step the engine's device cannot run runs on the cpu with
// the copies it needs. The cpu has every kernel, so a fake marks steps of cpu engines: every op
// step of random programs on the host gives exactly the engine's results (in-place writes,
// views, runtime positions), through engine files too. Where this build has the CUDA backend
// (no GPU needed), place_on_host marks what cuda cannot run, names it with the bytes it moves,
// and strict mode refuses it.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "compiler/compile.h"
#include "engine/engine_file.h"
#include "engine/execution_context.h"
#include "engine/host_fallback.h"
#include "frontend/graph_json.h"
#include "random_program.h"
#include "test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

// Every op step of `e` marked to run on the host.
std::shared_ptr<const Engine> all_on_host(const Engine& e) {
  Plan p = e.plan();
  for (Step& s : p.steps)
    s.on_host = s.op && (s.kind == StepKind::kOut || s.kind == StepKind::kEager);
  return Engine::from_plan(std::move(p), e.name(), e.aliased_io());
}

struct Called {
  std::vector<Tensor> outputs, bound;  // copies of the outputs; the bound tensors after the call
  std::string error;
};

Called call(std::shared_ptr<const Engine> e, const CompiledProgram& cp, const Graph& g,
            const std::vector<Tensor>& inputs) {
  Called c;
  ExecutionContext ctx(std::move(e));
  for (int i = 0; i < cp.num_user_inputs; ++i) c.bound.push_back(inputs[i].clone());
  for (const auto& [index, target] : cp.lifted_buffers)
    c.bound.push_back(g.constants.at(target).clone());
  for (size_t i = 0; i < c.bound.size(); ++i) ctx.bind_input(static_cast<int>(i), c.bound[i]);
  try {
    for (const Tensor& t : ctx.execute()) c.outputs.push_back(t.clone());
  } catch (const Error& err) {
    c.error = err.what();
  }
  return c;
}

void expect_same(const Called& want, const Called& got) {
  ASSERT_EQ(want.error.empty(), got.error.empty()) << want.error << " | " << got.error;
  if (!want.error.empty()) return;
  ASSERT_EQ(want.outputs.size(), got.outputs.size());
  for (size_t j = 0; j < want.outputs.size(); ++j)
    EXPECT_TRUE(tensor_equal(got.outputs[j], want.outputs[j])) << "output " << j;
  for (size_t i = 0; i < want.bound.size(); ++i)
    EXPECT_TRUE(tensor_equal(got.bound[i], want.bound[i])) << "binding " << i;
}

int check_program(const RandomProgram& p, const std::vector<std::vector<Tensor>>& draws) {
  int steps = 0;
  for (bool alias : {true, false}) {
    CompileOptions o;
    o.alias = alias;
    std::optional<CompiledProgram> cp;
    try {
      cp = compile(*p.graph, draws[0], o);
    } catch (const Error&) {
      return 0;  // a program the engine refuses refuses with or without steps on the host
    }
    std::shared_ptr<const Engine> host = all_on_host(*cp->engine);
    steps += static_cast<int>(host->host_steps().size());
    for (const std::vector<Tensor>& d : draws)
      expect_same(call(cp->engine, *cp, *p.graph, d), call(host, *cp, *p.graph, d));
  }
  return steps;
}

TEST(HostSteps, EveryStepOnTheHostEqualsTheEngineOnRandomPrograms) {
  int programs = 0, steps = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    RandomProgram p = make_random_program(seed);
    SCOPED_TRACE(::testing::Message() << "seed " << seed << "\n" << p.graph->to_string());
    const int n = check_program(p, {in_placeholder_order(p, p.inputs)});
    programs += n > 0;
    steps += n;
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GE(programs, 200);
  EXPECT_GE(steps, 1000);
}

TEST(HostSteps, EveryStepOnTheHostFollowsRuntimePositions) {
  int programs = 0;
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    RandomProgramOptions o;
    o.runtime_positions = true;
    RandomProgram p = make_random_program(seed, o);
    std::vector<std::vector<Tensor>> draws{in_placeholder_order(p, p.inputs)};
    for (uint64_t k = 0; k < 4; ++k)
      draws.push_back(in_placeholder_order(p, redraw_inputs(p, seed * 7919 + k)));
    SCOPED_TRACE(::testing::Message() << "seed " << seed << "\n" << p.graph->to_string());
    programs += check_program(p, draws) > 0;
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GE(programs, 100);
}

std::unique_ptr<Graph> cumsum_graph() {
  return read_graph_json_string(R"({"format": "inplace.graph", "version": 1, "name": "g",
    "nodes": [
      {"name": "x", "op": "placeholder", "target": "x", "args": [], "kwargs": {}},
      {"name": "y", "op": "call_function", "target": "aten.cumsum.default",
       "args": [{"node": "x"}, 0], "kwargs": {}},
      {"name": "z", "op": "call_function", "target": "aten.mul.Scalar",
       "args": [{"node": "y"}, 2], "kwargs": {}},
      {"name": "output", "op": "output", "target": "output", "args": [{"node": "z"}],
       "kwargs": {}}]})",
                                "test");
}

TEST(HostSteps, EngineFilesKeepTheStepsAndDescribeThem) {
  auto g = cumsum_graph();
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4}, {4});
  CompiledProgram cp = compile(*g, {x});
  EXPECT_TRUE(cp.engine->host_steps().empty());
  EXPECT_EQ(cp.engine->describe().find("on the host"), std::string::npos);
  std::shared_ptr<const Engine> host = all_on_host(*cp.engine);
  ASSERT_EQ(host->host_steps().size(), 2u);
  EXPECT_EQ(host->host_steps()[0].node, "y");
  EXPECT_EQ(host->host_steps()[0].op, "cumsum");
  EXPECT_EQ(host->host_steps()[0].bytes, 32);  // float32[4] there and back
  const std::string plan = host->describe();
  EXPECT_NE(plan.find("cumsum [on the host]("), std::string::npos) << plan;
  EXPECT_NE(plan.find("steps on the host:\n  node 'y': op 'cumsum'"), std::string::npos) << plan;
  EXPECT_NE(plan.find("2 steps on the host move 64 bytes per call"), std::string::npos) << plan;
  std::shared_ptr<const Engine> loaded = deserialize_engine(serialize_engine(*host), "mem");
  ASSERT_EQ(loaded->host_steps().size(), 2u);
  EXPECT_EQ(loaded->host_steps()[1].node, "z");
  expect_same(call(cp.engine, cp, *g, {x}), call(loaded, cp, *g, {x}));
  // An engine without steps on the host writes the bytes it always wrote (old readers load it).
  EXPECT_EQ(deserialize_engine(serialize_engine(*cp.engine), "mem")->host_steps().size(), 0u);
}

TEST(HostSteps, OnlyAnOpStepMayRunOnTheHost) {
  auto g = read_graph_json_string(R"({"format": "inplace.graph", "version": 1, "name": "g",
    "nodes": [
      {"name": "x", "op": "placeholder", "target": "x", "args": [], "kwargs": {}},
      {"name": "a", "op": "call_method", "target": "add_", "args": [{"node": "x"}, 1],
       "kwargs": {}},
      {"name": "output", "op": "output", "target": "output", "args": [{"node": "a"}],
       "kwargs": {}}]})",
                                  "test");
  CompileOptions o;
  o.alias = false;  // the copy-back engine: a copy step writes x back
  CompiledProgram cp = compile(*g, {Tensor::zeros({3}, DType::kFloat32)}, o);
  Plan p = cp.engine->plan();
  bool marked = false;
  for (Step& s : p.steps)
    if (s.kind == StepKind::kCopy) s.on_host = marked = true;
  ASSERT_TRUE(marked) << cp.engine->describe();
  EXPECT_TRUE(mentions(error_of([&] { Engine::from_plan(p, "g", {}); }),
                       {"only a step with an op may run on the host"}));
}

#ifdef INPLACE_WITH_CUDA
// The plan of `g` as a cuda engine would have it (built for the cpu, where the engine can be
// made without a GPU).
Plan cuda_plan(const Graph& g, const std::vector<Tensor>& inputs) {
  Plan p = compile(g, inputs).engine->plan();
  p.device = Device::cuda();
  return p;
}

TEST(HostSteps, AnOpWithoutACudaKernelGoesToTheHostNamedWithItsBytes) {
  auto g = cumsum_graph();
  Plan p = cuda_plan(*g, {Tensor::zeros({4}, DType::kFloat32)});
  std::vector<HostStep> on_host = place_on_host(p, /*strict=*/false);
  ASSERT_EQ(on_host.size(), 1u);
  EXPECT_EQ(on_host[0].node, "y");
  EXPECT_EQ(on_host[0].op, "cumsum");
  EXPECT_EQ(on_host[0].why, "has no kernel for device 'cuda:0'");
  EXPECT_EQ(on_host[0].bytes, 32);
  EXPECT_TRUE(p.steps[on_host[0].step].on_host);
  const std::string text = describe_host_steps(p, on_host, "> ");
  EXPECT_NE(text.find("> node 'y': op 'cumsum' has no kernel for device 'cuda:0'; runs on the "
                      "host, moving 32 bytes per call\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("> 1 step on the host moves 32 bytes per call (strict_device refuses such "
                      "steps); CUDA graphs are off for this engine"),
            std::string::npos)
      << text;
  Plan strict = cuda_plan(*g, {Tensor::zeros({4}, DType::kFloat32)});
  EXPECT_TRUE(mentions(error_of([&] { place_on_host(strict, /*strict=*/true); }),
                       {"[engine] node 'y': op 'cumsum' has no kernel for device 'cuda:0'",
                        "inplace ops --device cuda", "without strict_device it runs on the host"}));
}

// A Hugging Face fixture compiled with the GPU's fusion choices (CompileOptions::fusion_device,
// fuse_pointwise asking cuda's kernel), its plan placed on cuda (compiled here for the cpu's
// kernel table: no GPU is needed to see what cuda would run). `skip`: passes left out.
Plan cuda_plan_of_fixture(const std::string& model, std::vector<std::string> skip = {}) {
  auto g = read_graph_json(std::string(INPLACE_SOURCE_DIR) + "/tests/frontend/fixtures/hf/" +
                           model + ".json");
  std::vector<Tensor> inputs;
  for (Node* n : g->placeholders()) inputs.push_back(Tensor::zeros(*n->meta.shape, *n->meta.dtype));
  CompileOptions o;
  o.fusion_device = DeviceType::kCuda;
  o.skip_passes = std::move(skip);
  Plan p = compile(*g, inputs, o).engine->plan();
  p.device = Device::cuda();
  return p;
}

// Which ops of the Hugging Face decoders (torch.export fixtures) cuda runs on the host, with the
// GPU's fusion choices: none, so far. A new op there without a CUDA kernel shows up here first.
TEST(HostSteps, HuggingFaceFixturesOnCuda) {
  for (const char* model : {"llama", "qwen2", "gpt2", "mistral", "phi3", "gemma", "qwen3",
                            "qwen3_bf16", "gemma3", "gemma3_bf16"}) {
    SCOPED_TRACE(model);
    Plan p = cuda_plan_of_fixture(model);
    std::string ops;
    for (const HostStep& h : place_on_host(p, false)) ops += " " + h.op;
    EXPECT_EQ(ops, "") << "ops of " << model << " without a CUDA kernel:" << ops;
  }
}
// The steps the named fusions write (passes/fuse_*.cpp, recognize_attention, kv_cache_update).
const std::set<std::string> kNamedFusions = {
    "rms_norm",        "upcast_rms_norm", "layer_norm",      "rotary_embedding",
    "fused_linear",    "gated_mlp",       "rms_norm_linear", "rms_norm_gated_mlp",
    "kv_cache_update", "fused_embedding", "fused_addmm",     "scaled_dot_product_attention",
    "rotary_table"};

// fuse_pointwise for cuda: its chains become fused_pointwise steps that cuda's kernel runs (none
// on the host), and it runs after the named fusions, whose steps it leaves as they are (GPT-2's
// GELU step stays its own here: fuse_product_epilogues, left out, would make it c_fc's epilogue).
// At bfloat16 Llama and Gemma keep no chain for it: their one chain, the rotary table, is
// fuse_rotary_table's step.
TEST(HostSteps, HuggingFaceFixturesFusePointwiseOnCuda) {
  int fused_models = 0;
  for (const char* model : {"llama", "llama_bf16", "gpt2", "gemma", "gemma_bf16", "phi3"}) {
    SCOPED_TRACE(model);
    Plan with = cuda_plan_of_fixture(model, {"fuse_product_epilogues"}),
         without = cuda_plan_of_fixture(model, {"fuse_pointwise", "fuse_product_epilogues"});
    auto named = [](const Plan& p) {
      std::map<std::string, int> n;
      for (const Step& s : p.steps)
        if (s.op && kNamedFusions.count(s.op->schema.name)) ++n[s.op->schema.name];
      return n;
    };
    EXPECT_EQ(named(with), named(without));
    EXPECT_FALSE(named(with).empty());
    int fused = 0;
    for (const Step& s : with.steps) fused += s.op && s.op->schema.name == "fused_pointwise";
    EXPECT_EQ(with.steps.size() < without.steps.size(), fused > 0);
    fused_models += fused > 0;
    std::string ops;
    for (const HostStep& h : place_on_host(with, false)) ops += " " + h.op;
    EXPECT_EQ(ops, "") << "on the host:" << ops;
  }
  EXPECT_EQ(fused_models, 4);  // all but llama_bf16 and gemma_bf16
}

// The bf16 fixtures with the GPU's fusion choices: every norm and product of the fused linear
// family reaches a CUDA kernel (gemv_half), none runs on the host; a layer's q, k and v are one
// product (Phi-3's own qkv_proj), its gate and up one gated MLP (Phi-3's gate_up_proj halves,
// Gemma's GeGLU).
TEST(HostSteps, HuggingFaceBf16FusedLinearFamilyOnCuda) {
  for (const char* model : {"llama_bf16", "mistral_bf16", "gemma_bf16", "phi3_bf16"}) {
    SCOPED_TRACE(model);
    Plan p = cuda_plan_of_fixture(model);
    int fused = 0, norm_linear = 0, grouped = 0, gated = 0;
    for (const Step& s : p.steps)
      if (s.op) {
        const std::string op = s.op->schema.name;
        fused += op == "rms_norm_linear" || op == "rms_norm_gated_mlp" || op == "fused_linear";
        norm_linear += op == "rms_norm_linear";
        gated += op == "rms_norm_gated_mlp";
        grouped += op == "rms_norm_linear" && s.node.find("merged") != std::string::npos;
      }
    EXPECT_GT(fused, 0);
    // q, k and v one grouped product a layer (their weights are inputs: more_weights, not a
    // stacked copy; Phi-3's is one weight already), and the LM head: two layers.
    EXPECT_EQ(grouped, std::string(model) == "phi3_bf16" ? 0 : 2);
    EXPECT_EQ(norm_linear, 3);
    EXPECT_EQ(gated, 2);
    std::string ops;
    for (const HostStep& h : place_on_host(p, false))
      if (h.op.find("linear") != std::string::npos || h.op.find("norm") != std::string::npos ||
          h.op == "gated_mlp")
        ops += " " + h.op;
    EXPECT_EQ(ops, "") << "fused ops of " << model << " without a CUDA kernel:" << ops;
  }
}
#endif

}  // namespace
