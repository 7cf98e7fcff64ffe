// The pipeline: order, until / print_after, verification after each pass, timing.
#include <sstream>

#include "pass_test_util.h"
#include "passes/pipeline.h"

namespace inplace::testing {
namespace {

std::unique_ptr<Graph> small_program() {
  GraphBuilder b("small");
  Node* x = b.placeholder("x");
  Node* unused = b.call_function("torch.neg", {x});
  (void)unused;
  b.call_method("add_", {x, 1.0});
  b.output(b.call_function("torch.mul", {x, 2.0}));
  return b.build();
}

TEST(Pipeline, PassesRunInTheDocumentedOrder) {
  EXPECT_EQ(functionalization_pass_names(),
            (std::vector<std::string>{"normalize", "alias_analysis", "inplace_to_out_of_place",
                                      "dead_code_elimination"}));
}

TEST(Pipeline, EnginePassesFollowFunctionalization) {
  const std::vector<std::string> engine = {"drop_eval_dropout",
                                           "lift_mutated_buffers",
                                           "kv_cache_update",
                                           "drop_identity_casts",
                                           "recognize_attention",
                                           "canonicalize_repeat_kv",
                                           "attend_filled_prefix",
                                           "fold_position_arithmetic",
                                           "outer_product_matmul",
                                           "fuse_rotary_table",
                                           "prepare_in_out_weights",
                                           "fuse_weight_casts",
                                           "fuse_rms_norm",
                                           "fuse_rotary",
                                           "fuse_linear_epilogues",
                                           "fuse_addmm",
                                           "merge_sibling_linears",
                                           "fuse_norm_prologues",
                                           "fuse_head_norm_rotary",
                                           "fuse_rotary_epilogues",
                                           "fuse_norm_weight_offsets",
                                           "fuse_norm_residuals",
                                           "fuse_pointwise",
                                           "fuse_product_epilogues"};
  EXPECT_EQ(pass_names(engine_passes()), engine);
  std::vector<std::string> all = functionalization_pass_names();
  all.push_back("drop_eval_dropout");
  all.push_back("lift_mutated_buffers");
  all.push_back("kv_cache_update");
  all.push_back("drop_identity_casts");
  all.push_back("recognize_attention");
  all.push_back("canonicalize_repeat_kv");
  all.push_back("attend_filled_prefix");
  all.push_back("fold_position_arithmetic");
  all.push_back("outer_product_matmul");
  all.push_back("fuse_rotary_table");
  all.push_back("prepare_in_out_weights");
  all.push_back("fuse_weight_casts");
  all.push_back("fuse_rms_norm");
  all.push_back("fuse_rotary");
  all.push_back("fuse_linear_epilogues");
  all.push_back("fuse_addmm");
  all.push_back("merge_sibling_linears");
  all.push_back("fuse_norm_prologues");
  all.push_back("fuse_head_norm_rotary");
  all.push_back("fuse_rotary_epilogues");
  all.push_back("fuse_norm_weight_offsets");
  all.push_back("fuse_norm_residuals");
  all.push_back("fuse_pointwise");
  all.push_back("fuse_product_epilogues");
  EXPECT_EQ(pass_names(compile_passes()), all);
}

// A pass whose own check (Pass::check) fails: the pipeline runs it after the pass.
class PromiseBreakingPass : public Pass {
 public:
  std::string name() const override { return "promise_breaker"; }
  void run(Graph&, PassContext&) override {}
  void check(const Graph&) const override {
    IP_FAIL(kInternal, "[promise_breaker] promised more than it did");
  }
};

TEST(Pipeline, EachPassesCheckRunsAfterIt) {
  auto g = small_program();
  PassContext ctx;
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(std::make_unique<PromiseBreakingPass>());
  try {
    run_passes(passes, *g, ctx);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("promised more"), std::string::npos) << e.what();
  }
}

TEST(Pipeline, UntilStopsAndPrintAfterPrints) {
  auto g = small_program();
  PassContext ctx;
  PipelineOptions p;
  p.until = "alias_analysis";
  p.print_after = "normalize";
  std::ostringstream printed;
  p.print_to = &printed;
  functionalize(*g, ctx, p);
  EXPECT_NE(printed.str().find("aten.add_.Tensor"), std::string::npos) << printed.str();
  EXPECT_EQ(count_target(*g, "aten.add_.Tensor"), 1);  // not yet rewritten
  EXPECT_EQ(ctx.timings_ms.size(), 2u);
  EXPECT_EQ(ctx.io_map(), (std::map<int, int>{{1, 0}}));
}

TEST(Pipeline, FullRunIsFunctionalAndDeadCodeIsGone) {
  auto g = small_program();
  PassContext ctx;
  std::ostringstream log;
  ctx.log = &log;
  ctx.options.verbose = true;
  functionalize(*g, ctx);
  EXPECT_EQ(call_targets(*g), (std::vector<std::string>{"aten.add.Tensor", "aten.mul.Tensor"}));
  EXPECT_NO_THROW(verify_functional(*g));
  for (const char* name :
       {"normalize", "alias_analysis", "inplace_to_out_of_place", "dead_code_elimination"})
    EXPECT_NE(log.str().find(name), std::string::npos) << log.str();
  EXPECT_NE(log.str().find(" ms"), std::string::npos);
}

TEST(Pipeline, UnknownPassNameIsAnError) {
  auto g = small_program();
  PassContext ctx;
  PipelineOptions p;
  p.until = "fold_everything";
  try {
    functionalize(*g, ctx, p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fold_everything"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("normalize"), std::string::npos);
  }
}

class BreakingPass : public Pass {
 public:
  std::string name() const override { return "breaking"; }
  void run(Graph& graph, PassContext&) override {
    Node* out = graph.output();
    Node* late = graph.add_node(NodeOp::kCallFunction, "aten.neg.default",
                                {Value::node_ref(graph.placeholders()[0])});
    graph.erase(out);
    graph.add_node(NodeOp::kOutput, "output", {Value::node_ref(late)});
    // Now a node uses one defined after it.
    late->args[0] = Value::node_ref(graph.output());
  }
};

TEST(Pipeline, AGraphBrokenByAPassIsReportedWithThePassName) {
  auto g = small_program();
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(std::make_unique<BreakingPass>());
  PassContext ctx;
  try {
    run_passes(passes, *g, ctx);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'breaking'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace inplace::testing
