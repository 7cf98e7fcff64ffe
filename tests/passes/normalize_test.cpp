// normalize: canonical targets for every FX spelling, keywords bound to positions, defaults.
#include "pass_test_util.h"
#include "passes/pipeline.h"

namespace inplace::testing {
namespace {

void normalize(Graph& g, PassOptions options = {}) {
  PassContext ctx;
  ctx.options = std::move(options);
  PipelineOptions p;
  p.until = "normalize";
  functionalize(g, ctx, p);
}

TEST(Normalize, EverySpellingReachesTheSameCanonicalTarget) {
  GraphBuilder b("spellings");
  Node* x = b.placeholder("x");
  Node* y = b.placeholder("y");
  std::vector<Node*> adds = {
      b.call_method("add", {x, y}),
      b.call_function("torch.add", {x, y}),
      b.call_function("_operator.add", {x, y}),
      b.call_function("operator.add", {x, y}),
      b.call_function("aten.add.Tensor", {x, y}),
      b.call_function("torch.ops.aten.add.Tensor", {x, y}),
      b.call_method("__add__", {x, y}),
  };
  Node* relu = b.call_function("torch.nn.functional.relu", {x});
  Node* set = b.call_method("__setitem__", {x, 0, 1.0});
  Node* get = b.call_method("__getitem__", {x, 0});
  b.output(arg::tuple({adds[0], relu, get}));
  auto g = b.build();
  normalize(*g, {.input_metas = {{"x", Meta{Shape{2, 2}, DType::kFloat32, {}}},
                                 {"y", Meta{Shape{2, 2}, DType::kFloat32, {}}}}});
  for (Node* n : adds) {
    EXPECT_EQ(n->op, NodeOp::kCallFunction) << n->name;
    EXPECT_EQ(n->target, "aten.add.Tensor") << n->name;
    ASSERT_EQ(n->args.size(), 2u) << n->name;
    ASSERT_EQ(n->kwargs.size(), 1u) << n->name;
    EXPECT_EQ(n->kwargs[0].first, "alpha");
    EXPECT_EQ(n->kwargs[0].second.i, 1);
  }
  EXPECT_EQ(relu->target, "aten.relu.default");
  EXPECT_EQ(set->target, "_operator.setitem");
  EXPECT_EQ(get->target, "_operator.getitem");
  // Shapes were recorded as the pass went.
  ASSERT_TRUE(adds[0]->meta.shape.has_value());
  EXPECT_EQ(*adds[0]->meta.shape, (Shape{2, 2}));
}

TEST(Normalize, KeywordsBindToPositionsAndDefaultsAreFilled) {
  GraphBuilder b("kwargs");
  Node* x = b.placeholder("x");
  Node* s = b.call_method("sum", {x}, {{"dim", arg::list({1})}, {"keepdim", true}});
  Node* v = b.call_method("view", {x, 2, 3});
  Node* sl = b.call_function("aten.slice.Tensor", {x}, {{"start", 1}});
  Node* t = b.call_method("transpose", {x}, {{"dim1", 0}, {"dim0", 1}});
  b.output(arg::tuple({s, v, sl, t}));
  auto g = b.build();
  normalize(*g);
  EXPECT_EQ(s->target, "aten.sum.dim_IntList");
  EXPECT_EQ(s->args.size(), 3u);  // self, dim, keepdim
  EXPECT_EQ(s->args[1].to_string(), "[1]");
  EXPECT_TRUE(s->args[2].b);
  EXPECT_EQ(v->target, "aten.view.default");
  EXPECT_EQ(v->args[1].to_string(), "[2, 3]");
  EXPECT_EQ(sl->to_string(),
            "slice = call_function[target=aten.slice.Tensor](args = (%x, 0, 1, None, 1), "
            "kwargs = {})");
  EXPECT_EQ(t->args[1].i, 1);
  EXPECT_EQ(t->args[2].i, 0);
  EXPECT_TRUE(t->kwargs.empty());
  // Normalizing twice changes nothing.
  std::string once = g->to_string();
  normalize(*g);
  EXPECT_EQ(g->to_string(), once);
}

TEST(Normalize, NormalizedGraphsRunTheSame) {
  GraphBuilder b("same");
  Node* x = b.placeholder("x");
  Node* m = b.call_method("mean", {x}, {{"dim", -1}, {"keepdim", true}});
  Node* c = b.call_function("torch.clamp", {x}, {{"min", -0.5}});
  b.output(arg::tuple({m, c}));
  auto g = b.build();
  std::mt19937 rng(2);
  TensorMap in{{"x", random_tensor({3, 4}, DType::kFloat32, rng)}};
  State s1, s2;
  auto a = clone_inputs(in);
  RunOutput before = run_eager(*g, a, &s1);
  normalize(*g);
  RunOutput after = run_eager(*g, a, &s2);
  ASSERT_EQ(before.flat.size(), after.flat.size());
  for (size_t i = 0; i < before.flat.size(); ++i)
    EXPECT_TRUE(tensor_equal(after.flat[i].tensor, before.flat[i].tensor));
}

TEST(Normalize, UnknownOpsAreNamed) {
  GraphBuilder b("unknown");
  Node* x = b.placeholder("x");
  b.call_function("mylib.mystery", {x}, {}, "odd");
  b.output(x);
  auto g = b.build();
  try {
    normalize(*g);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'odd'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mylib.mystery"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace inplace::testing
