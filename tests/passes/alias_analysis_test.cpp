// alias_analysis: root_input through views, the outputs it appends, the io_map, and the ops it
// refuses.
#include "pass_test_util.h"
#include "passes/pipeline.h"

namespace inplace::testing {
namespace {

// Runs normalize + alias_analysis only.
PassContext analyse(Graph& g) {
  PassContext ctx;
  PipelineOptions until;
  until.until = "alias_analysis";
  functionalize(g, ctx, until);
  return ctx;
}

// A custom op that writes its first argument, registered once for these tests. It has a
// functional twin or not, by name.
void register_test_ops() {
  static bool done = [] {
    // The registry is built once at start-up; tests may add to it before any graph uses it.
    auto& r = const_cast<Registry&>(Registry::get());
    auto write = [](const Args& a) {
      a[0].as_tensor("test").copy_from(a[1].as_tensor("test"));
      return Value::none();
    };
    OpDef no_twin;
    no_twin.schema = Schema::parse("test_cache_write(Tensor(a!) cache, Tensor value) -> ()");
    no_twin.eager = write;
    r.add(no_twin);
    OpDef twin = no_twin;
    twin.schema = Schema::parse("test_cache_store(Tensor(a!) cache, Tensor value) -> ()");
    twin.functional = "test_cache_stored";
    r.add(twin);
    OpDef frob;
    frob.schema = Schema::parse("test_frob_(Tensor(a!) self) -> Tensor(a!)");
    frob.eager = [](const Args& a) { return a[0]; };
    r.add(frob);
    r.add_eager("test_cache_stored(Tensor cache, Tensor value) -> Tensor", [](const Args& a) {
      Tensor out = a[0].as_tensor("test").clone();
      out.copy_from(a[1].as_tensor("test"));
      return Value::from_tensor(out);
    });
    return true;
  }();
  (void)done;
}

TEST(AliasAnalysis, RootInputThroughViews) {
  GraphBuilder b("roots");
  Node* cache = b.placeholder("cache");
  Node* x = b.placeholder("x");
  Node* t = b.call_method("transpose", {cache, 0, 1});
  Node* row = b.call_function("_operator.getitem", {t, 2});
  Node* parts = b.call_method("split", {row, 2});
  Node* piece = b.call_function("_operator.getitem", {parts, 1});
  Node* w = b.call_method("mul_", {piece, 2.0}, {}, "write");
  Node* y = b.call_function("torch.neg", {x});
  Node* w2 = b.call_method("add_", {y, 1.0}, {}, "write_intermediate");
  b.output(arg::tuple({y}));
  auto g = b.build();
  PassContext ctx = analyse(*g);
  EXPECT_EQ(w->meta.attrs["root_input"], "cache");
  EXPECT_EQ(w2->meta.attrs.count("root_input"), 0u);
  EXPECT_EQ(ctx.original_output_count, 1);
  EXPECT_EQ(ctx.io_map(), (std::map<int, int>{{1, 0}}));
  EXPECT_EQ(output_node(*g, 1), cache);  // its final value, appended
  EXPECT_EQ(g->output()->meta.attrs["io_map"], "1:0");
}

TEST(AliasAnalysis, AppendsInInputOrderAndReusesExistingOutputs) {
  GraphBuilder b("order");
  Node* a = b.placeholder("a");
  Node* bb = b.placeholder("b");
  Node* c = b.placeholder("c");
  b.call_function("_operator.setitem", {c, 0, 1.0});
  b.call_method("zero_", {a});
  Node* r = b.call_method("add_", {bb, 1.0});  // b's final value, returned
  Node* view = b.call_method("view", {a, -1});
  b.output(arg::tuple({view, r}));
  auto g = b.build();
  PassContext ctx = analyse(*g);
  // b is output 1 already; a (a view of it is not a) and c are appended in input order.
  EXPECT_EQ(ctx.io_map(), (std::map<int, int>{{1, 1}, {2, 0}, {3, 2}}));
  EXPECT_EQ(output_node(*g, 2), a);
  EXPECT_EQ(output_node(*g, 3), c);
  ASSERT_EQ(ctx.mutations.size(), 3u);
  EXPECT_EQ(ctx.input_names[ctx.mutations[0].input], "a");
  EXPECT_EQ(ctx.mutations[0].output, 2);
  EXPECT_EQ(ctx.input_names[ctx.mutations[2].input], "c");
}

TEST(AliasAnalysis, NoMutationNoChange) {
  GraphBuilder b("pure");
  Node* x = b.placeholder("x");
  b.output(b.call_function("torch.relu", {x}));
  auto g = b.build();
  PassContext ctx = analyse(*g);
  EXPECT_TRUE(ctx.io_map().empty());
  EXPECT_FALSE(ctx.output_wrapped);
  EXPECT_EQ(ctx.original_output_count, 1);
}

TEST(AliasAnalysis, CustomMutatingOpWithoutTwinIsRefused) {
  register_test_ops();
  GraphBuilder b("custom");
  Node* cache = b.placeholder("cache");
  Node* v = b.placeholder("v");
  b.call_function("test_cache_write", {cache, v}, {}, "update");
  b.output(cache);
  auto g = b.build();
  try {
    analyse(*g);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("[alias_analysis]"), std::string::npos) << m;
    EXPECT_NE(m.find("'update'"), std::string::npos) << m;
    EXPECT_NE(m.find("test_cache_write"), std::string::npos) << m;
  }
}

TEST(AliasAnalysis, InPlaceOpWithoutOutOfPlaceFormIsRefusedByTheRewrite) {
  register_test_ops();
  GraphBuilder b("frob");
  Node* x = b.placeholder("x");
  b.call_method("test_frob_", {x}, {}, "frobbed");
  b.output(x);
  auto g = b.build();
  auto g2 = g->clone();
  EXPECT_NO_THROW(analyse(*g));  // alias_analysis records it; the rewrite has no form for it
  PassContext ctx;
  try {
    functionalize(*g2, ctx);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("[inplace_to_out_of_place] node 'frobbed'"), std::string::npos) << m;
    EXPECT_NE(m.find("'test_frob_' is not supported"), std::string::npos) << m;
  }
}

TEST(AliasAnalysis, CustomMutatingOpWithTwinIsFunctionalized) {
  register_test_ops();
  GraphBuilder b("custom_twin");
  Node* cache = b.placeholder("cache");
  Node* v = b.placeholder("v");
  Node* slot = b.call_function("_operator.getitem", {cache, 1});
  b.call_function("test_cache_store", {slot, v}, {}, "update");
  b.output(b.call_function("torch.sum", {cache}));
  auto g = b.build();
  std::mt19937 rng(5);
  TensorMap in{{"cache", random_tensor({3, 4}, DType::kFloat32, rng)},
               {"v", random_tensor({4}, DType::kFloat32, rng)}};
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, in, &c));
  EXPECT_EQ(count_target(*c.program.graph, "aten.test_cache_stored.default"), 1);
  EXPECT_EQ(c.program.context.io_map(), (std::map<int, int>{{1, 0}}));
}

TEST(AliasAnalysis, DeclaredMutatedInputsJoinTheIoMap) {
  // An already functional graph: output 1 is the new value of `state`.
  GraphBuilder b("declared");
  Node* x = b.placeholder("x");
  Node* state = b.placeholder("state");
  Node* next = b.call_function("torch.add", {state, x});
  b.output(arg::tuple({x, next}));
  auto g = b.build();
  PassContext ctx;
  ctx.options.mutated_inputs = {{"state", 1}};
  functionalize(*g, ctx);
  EXPECT_EQ(ctx.io_map(), (std::map<int, int>{{1, 1}}));
  EXPECT_EQ(ctx.original_output_count, 2);
  ctx.options.mutated_inputs = {{"nope", 1}};
  auto g2 = g->clone();
  PassContext bad;
  bad.options.mutated_inputs = {{"nope", 0}};
  EXPECT_THROW(functionalize(*g2, bad), Error);
}

TEST(AliasAnalysis, ExportSignatureMutationsJoinTheIoMap) {
  GraphBuilder b("export");
  Node* buf = b.placeholder("b_running");
  Node* x = b.placeholder("x");
  Node* next = b.call_function("aten.add.Tensor", {buf, x});
  Node* y = b.call_function("aten.mul.Tensor", {x, 2});
  b.output(arg::tuple({next, y}));
  Signature sig;
  sig.inputs = {{"buffer", "b_running", "running"}, {"user_input", "x", "x"}};
  sig.outputs = {{"buffer_mutation", "running"}, {"user_output", ""}};
  b.set_signature(sig);
  auto g = b.build();
  PassContext ctx;
  functionalize(*g, ctx);
  EXPECT_EQ(ctx.io_map(), (std::map<int, int>{{0, 0}}));
}

}  // namespace
}  // namespace inplace::testing
