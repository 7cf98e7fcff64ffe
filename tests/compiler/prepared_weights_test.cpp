// Prepared weights (prepare_in_out_weights, compiler/prepared_inputs.h, Plan::prepared): GPT-2's
// Conv1D products read an [out, in] copy of each weight that the context makes when the weight
// is bound, or when the caller says it wrote into it, never per call; a constant weight is
// transposed at compile time. Compared with the engine that reads the weights as they lie, with
// a fresh context, and with an engine file's load.
#include <gtest/gtest.h>

#include "compiler/hf_fixtures.h"
#include "compiler/rewrite_differential.h"
#include "engine/engine_file.h"
#include "ir/builder.h"
#include "ir/export_signature.h"
#include "program/engine_program.h"
#include "program/program.h"
#include "program/session.h"

namespace inplace::testing {
namespace {

// Two layers of four Conv1D products: c_attn, attn.c_proj, c_fc, mlp.c_proj.
constexpr int kGpt2Products = 8;

CompileOptions as_they_lie() {
  CompileOptions o;
  o.prepare_weights = false;
  return o;
}

std::vector<Tensor> run(const std::shared_ptr<const Engine>& e, const std::vector<Tensor>& draw) {
  const std::vector<Tensor> inputs = clones(draw);
  ExecutionContext ctx(e);
  for (size_t i = 0; i < e->inputs().size(); ++i) ctx.bind_input(static_cast<int>(i), inputs[i]);
  std::vector<Tensor> out = ctx.execute();
  out.insert(out.end(), inputs.begin(), inputs.end());
  return out;
}

void expect_all_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t j = 0; j < a.size(); ++j) EXPECT_TRUE(tensor_equal(a[j], b[j], tol)) << "value " << j;
}

// The cpu prepares every Conv1D weight (one copy each) and its products read the copies; the
// results agree with the products over the weights as they lie on fresh weights, tokens and
// positions (the sums run in another order: float32 tolerance).
TEST(PreparedWeights, Gpt2ProductsReadPreparedRows) {
  auto g = hf_fixture("gpt2");
  std::vector<std::vector<Tensor>> draws;
  for (uint32_t s : {0u, 5u, 33u, 63u}) draws.push_back(seeded_hf_inputs(*g, s, 64));
  const CompiledOnce prepared(*g, draws[1], {}), lying(*g, draws[1], as_they_lie());
  const std::string plan = prepared.plan();
  EXPECT_EQ(count_of(plan, "= permute("), kGpt2Products) << plan;
  EXPECT_EQ(count_of(plan, "fused_addmm("), 0) << plan;
  EXPECT_EQ(count_of(plan, "addmm("), 0) << plan;
  EXPECT_EQ(count_of(lying.plan(), "fused_addmm("), kGpt2Products) << lying.plan();
  for (size_t d = 0; d < draws.size(); ++d) {
    SCOPED_TRACE(str_cat("draw ", d));
    const EngineCall a = prepared.call(draws[d]), b = lying.call(draws[d]);
    ASSERT_EQ(a.outputs.size(), b.outputs.size());
    for (size_t j = 0; j < a.outputs.size(); ++j)
      EXPECT_TRUE(tensor_equal(a.outputs[j], b.outputs[j], 1e-4)) << "output " << j;
    for (size_t i = 0; i < a.inputs.size(); ++i)
      EXPECT_TRUE(tensor_equal(a.inputs[i], b.inputs[i], 1e-4)) << "input " << i;
  }
}

// A context makes its prepared copies before its first call, again for a weight bound anew or
// written in place (input_written), and not for a weight bound again as it was; each call then
// computes what a fresh context bound to the same tensors computes, bit for bit.
TEST(PreparedWeights, TheContextMakesCopiesWhenAWeightChanges) {
  for (const char* model : {"gpt2", "gpt2_bf16"}) {
    SCOPED_TRACE(model);
    auto g = hf_fixture(model);
    const CompiledProgram cp = compile(*g, seeded_hf_inputs(*g, 1, 64));
    const std::shared_ptr<const Engine>& e = cp.engine;
    ASSERT_EQ(e->plan().prepared.size(), static_cast<size_t>(kGpt2Products));
    std::vector<Tensor> inputs = seeded_hf_inputs(*g, 2, 64);
    const int w = e->input_index("p_model_transformer_h_0_attn_c_attn_weight");
    ExecutionContext ctx(e);
    auto bind_all = [&](ExecutionContext& c, const std::vector<Tensor>& in) {
      for (size_t i = 0; i < e->inputs().size(); ++i) c.bind_input(static_cast<int>(i), in[i]);
    };
    // What a fresh context computes from `in` (the caches copied: a call writes them).
    auto fresh = [&](const std::vector<Tensor>& in) {
      std::vector<Tensor> copy = in;
      for (size_t i = 0; i < copy.size(); ++i)
        if (e->input_is_aliased(static_cast<int>(i))) copy[i] = in[i].clone();
      ExecutionContext c(e);
      bind_all(c, copy);
      return c.execute();
    };
    bind_all(ctx, inputs);
    auto expected = fresh(inputs);
    expect_all_equal(ctx.execute(), expected, 0);
    EXPECT_EQ(ctx.stats().prepared_inputs, kGpt2Products);
    ctx.execute();
    EXPECT_EQ(ctx.stats().prepared_inputs, kGpt2Products);  // nothing changed
    ctx.bind_input(w, inputs[w]);                           // the same tensor again
    ctx.execute();
    EXPECT_EQ(ctx.stats().prepared_inputs, kGpt2Products);

    inputs[w] = seeded_hf_inputs(*g, 3, 64)[w];  // another tensor
    ctx.bind_input(w, inputs[w]);
    expected = fresh(inputs);
    expect_all_equal(ctx.execute(), expected, 0);
    EXPECT_EQ(ctx.stats().prepared_inputs, kGpt2Products + 1);

    inputs[w].copy_from(seeded_hf_inputs(*g, 4, 64)[w]);  // written where it lies
    ctx.input_written(w);
    expected = fresh(inputs);
    expect_all_equal(ctx.execute(), expected, 0);
    EXPECT_EQ(ctx.stats().prepared_inputs, kGpt2Products + 2);
  }
}

// Prepared bindings are the engine's: not listed among the inputs, not bindable, not named.
TEST(PreparedWeights, TheCallerCannotBindAPreparedInput) {
  auto g = hf_fixture("gpt2");
  const CompiledProgram cp = compile(*g, seeded_hf_inputs(*g, 1, 64));
  const Plan& plan = cp.engine->plan();
  ASSERT_FALSE(plan.prepared.empty());
  EXPECT_EQ(cp.engine->inputs().size(), plan.inputs.size() - plan.prepared.size());
  const PreparedInput& p = plan.prepared[0];
  ExecutionContext ctx(cp.engine);
  const Binding& b = plan.inputs[p.input];
  EXPECT_TRUE(mentions(error_of([&] { ctx.bind_input(p.input, Tensor::zeros(b.shape, b.dtype)); }),
                       {"[bind] input index", "out of range"}));
  EXPECT_TRUE(mentions(error_of([&] { cp.engine->input_index(b.name); }),
                       {"has no input binding named '" + b.name + "'"}));
  EXPECT_TRUE(mentions(error_of([&] { ctx.input_written(p.input); }), {"out of range"}));
}

// An engine file keeps the prepared bindings: the loaded engine computes the compiled one's
// values bit for bit. A plan whose prepared binding is no permutation of a caller binding, or is
// made from another prepared one, is refused naming it.
TEST(PreparedWeights, EngineFilesKeepThePreparedBindings) {
  for (const char* model : {"gpt2", "gpt2_bf16"}) {
    SCOPED_TRACE(model);
    auto g = hf_fixture(model);
    const CompiledProgram cp = compile(*g, seeded_hf_inputs(*g, 1, 64));
    const std::shared_ptr<const Engine> loaded =
        deserialize_engine(serialize_engine(*cp.engine), "<memory>");
    EXPECT_EQ(loaded->plan().prepared.size(), static_cast<size_t>(kGpt2Products));
    EXPECT_EQ(loaded->inputs().size(), cp.engine->inputs().size());
    const std::vector<Tensor> draw = seeded_hf_inputs(*g, 9, 64);
    expect_all_equal(run(cp.engine, draw), run(loaded, draw), 0);

    Plan bad = cp.engine->plan();
    bad.prepared[0].source = bad.prepared[1].input;
    EXPECT_TRUE(mentions(error_of([&] { Engine::from_plan(bad, "bad", {}); }),
                         {"[plan] prepared binding", "no caller binding"}));
    bad = cp.engine->plan();
    bad.prepared[0].perm = {0, 1};
    EXPECT_TRUE(
        mentions(error_of([&] { Engine::from_plan(bad, "bad", {}); }), {"no permutation of"}));
  }
}

// INPLACE_PREPARE_WEIGHTS decides where the options leave it open (A/B runs of a model's step):
// 0 keeps GPT-2's products over the weights as they lie, 1 prepares them, for the cpu's graph
// and for a GPU's (in a build with CUDA), whose backends both prepare them when it is unset; an
// explicit option wins; any other value is refused, naming the variable.
TEST(PreparedWeights, TheEnvironmentDecidesWhereTheOptionsLeaveItOpen) {
  auto g = hf_fixture("gpt2");
  const std::vector<Tensor> draw = seeded_hf_inputs(*g, 1, 64);
  auto prepared = [&](const CompileOptions& o) {
    return compile(*g, clones(draw), o).engine->plan().prepared.size();
  };
  const size_t all = kGpt2Products;
  CompileOptions open, on, off, gpu;
  on.prepare_weights = true;
  off.prepare_weights = false;
  gpu.fusion_device = DeviceType::kCuda;  // its decode rows exist only in a build with CUDA
  EXPECT_EQ(prepared(open), all);
  ::setenv("INPLACE_PREPARE_WEIGHTS", "0", 1);
  EXPECT_EQ(prepared(open), 0u);
  EXPECT_EQ(prepared(on), all);
#ifdef INPLACE_WITH_CUDA
  EXPECT_EQ(prepared(gpu), 0u);
#endif
  ::setenv("INPLACE_PREPARE_WEIGHTS", "1", 1);
  EXPECT_EQ(prepared(off), 0u);
  ::setenv("INPLACE_PREPARE_WEIGHTS", "on", 1);
  EXPECT_TRUE(mentions(error_of([&] { prepared(open); }), {"INPLACE_PREPARE_WEIGHTS='on'"}));
  ::unsetenv("INPLACE_PREPARE_WEIGHTS");
#ifdef INPLACE_WITH_CUDA
  EXPECT_EQ(prepared(gpu), all);  // the cuda backend prepares them too
#endif
}

// A program made from the engine with its state stored (what inplace.save writes) holds each
// prepared copy as a weight, made once there, and not the [in, out] weight it came from: its
// method prepares nothing and computes the engine's values bit for bit.
TEST(PreparedWeights, AProgramStoresTheCopiesAsWeights) {
  for (const char* model : {"gpt2", "gpt2_bf16"}) {
    SCOPED_TRACE(model);
    auto g = hf_fixture(model);
    const CompiledProgram cp = compile(*g, seeded_hf_inputs(*g, 1, 64));
    const std::vector<Tensor> draw = seeded_hf_inputs(*g, 11, 64);
    EngineProgramOptions o;
    std::map<std::string, Tensor> user;
    const std::vector<Node*> ph = g->placeholders();
    for (size_t i = 0; i < ph.size(); ++i) {
      if (is_lifted_placeholder(*g, ph[i]->name))
        o.state[static_cast<int>(i)] = {ph[i]->name, draw[i].clone()};
      else
        user[ph[i]->name] = draw[i].clone();
    }
    const std::shared_ptr<const Program> program = program_from_engine(cp.engine, o);
    const Engine& method = *program->method("forward").engine;
    EXPECT_TRUE(method.plan().prepared.empty()) << method.describe();
    EXPECT_EQ(
        method.weight_bytes(), cp.engine->weight_bytes() + [&] {
          int64_t n = 0;  // every parameter once, the Conv1D weights as their copies
          for (const auto& [i, s] : o.state)
            if (std::count(cp.engine->mutated_inputs().begin(), cp.engine->mutated_inputs().end(),
                           i) == 0)
              n += static_cast<int64_t>(s.value.nbytes());
          return n;
        }());
    std::vector<Tensor> got = program->new_session()->run("forward", user);
    std::vector<Tensor> want = run(cp.engine, draw);
    for (size_t j = 0; j < got.size(); ++j)
      EXPECT_TRUE(tensor_equal(got[j], want[j])) << "output " << j;
  }
}

// A constant weight stored [in, out] is transposed once, at compile time: the plan reads an
// [out, in] constant and prepares nothing; the engine equals the eager interpreter on fresh
// inputs (float32 tolerance: the sums run in the GEMV's order).
TEST(PreparedWeights, AConstantWeightIsTransposedAtCompileTime) {
  GraphBuilder b("conv1d");
  Node* x = b.set_meta(b.placeholder("x"), {1, 24}, DType::kFloat32);
  Node* w = b.get_attr("w", seeded_uniform({24, 40}, 7));
  Node* bias = b.get_attr("b", seeded_uniform({40}, 8));
  b.output(b.call_function("torch.addmm", {bias, x, w}));
  std::unique_ptr<Graph> g = b.build();
  std::vector<std::vector<Tensor>> draws;
  for (uint32_t s = 0; s < 4; ++s) draws.push_back({seeded_uniform({1, 24}, 100 + s)});
  EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 1e-5), 4);
  const CompiledProgram cp = compile(*g, draws[0]);
  EXPECT_TRUE(cp.engine->plan().prepared.empty());
  const std::string plan = cp.engine->describe();
  EXPECT_EQ(lines_with(plan, "= linear(", "[40,24]:float32"), 1) << plan;
  EXPECT_EQ(count_of(plan, "addmm("), 0) << plan;
  EXPECT_EQ(cp.engine->weight_bytes(), (40 * 24 + 40) * 4) << plan;  // [in, out] W is gone
}

}  // namespace
}  // namespace inplace::testing
