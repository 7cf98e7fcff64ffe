// Files written before the fused linear family was renamed (issue 28: linear_bf16_weight,
// linear_bf16_weight_add, swiglu_bf16_weight, embedding_bf16_weight) still load: the fixtures
// are an engine file and a program file that a build of that time compiled from
// fixtures/old_fused_names.json (an embedding, a q product, o_proj with its residual, a SwiGLU
// MLP, all of bf16 weights). Loaded now, their steps run the renamed ops (the old arguments,
// then the new ops' defaults: ops/renamed_ops.h) and compute what an engine compiled now from
// the same graph computes, bit for bit, and what the eager interpreter does. Likewise a step of
// an op that gained a defaulted argument at its end since (fused_linear's more_biases) takes its
// default.
#include <gtest/gtest.h>

#include <random>

#include "compiler/differential.h"
#include "engine/engine_file.h"
#include "frontend/graph_json.h"
#include "ir/builder.h"
#include "ops/renamed_ops.h"
#include "program/program_file.h"
#include "program/session.h"
#include "test_util.h"

namespace inplace {
using namespace inplace::testing;
namespace {

const std::string kDir = std::string(INPLACE_SOURCE_DIR) + "/tests/engine/fixtures/";

std::vector<Tensor> draw(std::mt19937& rng) {
  return {Tensor::from_vector<int64_t>({int64_t(rng() % 32)}, {1, 1}),
          uniform_tensor({1, 1, 16}, DType::kFloat32, rng)};
}

std::vector<std::string> step_ops(const Engine& e) {
  std::vector<std::string> ops;
  for (const Step& s : e.plan().steps)
    if (s.op) ops.push_back(s.op->schema.full_name());
  return ops;
}

TEST(RenamedOps, AnEngineFileOfTheOldNamesLoadsAndComputesAsBefore) {
  const std::shared_ptr<const Engine> e = load_engine(kDir + "old_fused_names.inplace");
  EXPECT_EQ(step_ops(*e), (std::vector<std::string>{"fused_embedding", "add.Tensor", "fused_linear",
                                                    "fused_linear", "gated_mlp"}));
  const auto g = read_graph_json(kDir + "old_fused_names.json");
  std::mt19937 rng(5);
  const std::vector<Tensor> examples = draw(rng);
  const CompiledProgram now = compile(*g, examples);
  EXPECT_EQ(step_ops(*now.engine), step_ops(*e));
  auto run = [](const std::shared_ptr<const Engine>& engine, const std::vector<Tensor>& in) {
    ExecutionContext ctx(engine);
    for (size_t i = 0; i < in.size(); ++i) ctx.bind_input(static_cast<int>(i), in[i]);
    return ctx.execute();
  };
  for (int d = 0; d < 3; ++d) {
    const std::vector<Tensor> in = draw(rng);
    const std::vector<Tensor> got = run(e, in), again = run(now.engine, in);
    // The eager chain widens the weights and sums in another order; the products reach a few
    // hundred, so float32 rounding is relative to the largest.
    const EagerRun want = run_reference(*g, in);
    ASSERT_EQ(got.size(), want.outputs.size());
    for (size_t j = 0; j < got.size(); ++j) {
      EXPECT_TRUE(tensor_equal(got[j], again[j], 0.0)) << "output " << j;
      EXPECT_TRUE(tensor_equal(got[j], want.outputs[j], 1e-3)) << "output " << j;
    }
  }
}

TEST(RenamedOps, AProgramFileOfTheOldNamesLoadsAndComputesAsBefore) {
  const std::shared_ptr<const Program> p = load_program(kDir + "old_fused_names_program.inplace");
  EXPECT_EQ(step_ops(*p->method("step").engine)[4], "gated_mlp");
  const auto g = read_graph_json(kDir + "old_fused_names.json");
  std::mt19937 rng(6);
  const std::vector<Tensor> in = draw(rng);
  const EagerRun want = run_reference(*g, in);
  const std::vector<Tensor> got = p->new_session()->run("step", {{"ids", in[0]}, {"x", in[1]}});
  ASSERT_EQ(got.size(), want.outputs.size());
  for (size_t j = 0; j < got.size(); ++j)
    EXPECT_TRUE(tensor_equal(got[j], want.outputs[j], 1e-3)) << "output " << j;
}

// A file of the build before more_biases: its grouped product's step (fused_linear with five
// arguments) loads with more_biases=[] and epilogue=[] and computes as the engine it was made
// from.
TEST(RenamedOps, AStepWithoutAnArgumentAddedSinceTakesItsDefault) {
  GraphBuilder b("siblings");
  Node* x = b.placeholder("x");
  Node* wq = b.placeholder("wq");
  Node* wk = b.placeholder("wk");
  b.output(arg::tuple({b.call_function("inplace.fused_linear", {x, wq}),
                       b.call_function("inplace.fused_linear", {x, wk})}));
  const auto g = b.build();
  std::mt19937 rng(8);
  const std::vector<Tensor> in{uniform_tensor({1, 1, 16}, DType::kFloat32, rng),
                               uniform_tensor({8, 16}, DType::kBFloat16, rng),
                               uniform_tensor({4, 16}, DType::kBFloat16, rng)};
  CompileOptions o;
  o.merge_sibling_linears = true;
  const CompiledProgram now = compile(*g, in, o);
  Plan old = now.engine->plan();
  int grouped = 0;
  for (Step& s : old.steps)
    if (s.op && s.op->schema.full_name() == "fused_linear") {
      ASSERT_EQ(s.args.size(), 7u);
      s.args.pop_back();  // epilogue
      s.args.pop_back();  // more_biases
      ++grouped;
    }
  ASSERT_EQ(grouped, 1);
  const std::string bytes = serialize_engine(*Engine::from_plan(old, "old", {}));
  const std::shared_ptr<const Engine> loaded = deserialize_engine(bytes, "old");
  for (const Step& s : loaded->plan().steps)
    if (s.op && s.op->schema.full_name() == "fused_linear") EXPECT_EQ(s.args.size(), 7u);
  auto run = [&](const std::shared_ptr<const Engine>& engine) {
    ExecutionContext ctx(engine);
    for (size_t i = 0; i < in.size(); ++i) ctx.bind_input(static_cast<int>(i), in[i]);
    return ctx.execute();
  };
  const std::vector<Tensor> got = run(loaded), want = run(now.engine);
  ASSERT_EQ(got.size(), want.size());
  for (size_t j = 0; j < got.size(); ++j) EXPECT_TRUE(tensor_equal(got[j], want[j], 0.0));
}

TEST(RenamedOps, OldTargetsInAGraphNameTheRenamedOps) {
  for (const RenamedOp& r : renamed_ops()) {
    std::string overload;
    EXPECT_EQ(Registry::get().canonical_name(std::string("inplace.") + r.old_name, &overload),
              r.new_name);
    EXPECT_EQ(find_op_or_renamed(r.old_name), Registry::get().find(r.new_name)) << r.old_name;
  }
  std::mt19937 rng(7);
  const Tensor x = uniform_tensor({1, 2, 16}, DType::kFloat32, rng);
  const Tensor w = uniform_tensor({8, 16}, DType::kBFloat16, rng);
  EXPECT_TRUE(tensor_equal(call_t("inplace.linear_bf16_weight", {T(x), T(w)}),
                           call_t("inplace.fused_linear", {T(x), T(w)}), 0.0));
  EXPECT_TRUE(tensor_equal(call_t("inplace.swiglu_bf16_weight", {T(x), T(w), T(w)}),
                           call_t("inplace.gated_mlp", {T(x), T(w), T(w)}), 0.0));
}

TEST(RenamedOps, AppendDefaultsFillsWhatTheNewOpAddedAndRefusesAMissingRequiredOne) {
  const OpDef* gated = Registry::get().find("gated_mlp");
  Args a{None(), None(), None()};
  ASSERT_TRUE(append_defaults(gated->schema, &a));
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[3].as_string("test"), "silu");
  Args short_args{None()};
  EXPECT_FALSE(append_defaults(gated->schema, &short_args));
}

}  // namespace
}  // namespace inplace
