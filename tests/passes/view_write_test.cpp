// The gaps the seed and its peers leave open: writes through any view chain, views read after a
// write, mixed tensor/int indices, masks with vector values, accumulating index_put, casts,
// results of earlier in-place ops, and aten-level graphs.
#include "pass_test_util.h"

namespace inplace::testing {
namespace {

TensorMap inputs(std::initializer_list<std::pair<std::string, Shape>> shapes, int seed = 7) {
  std::mt19937 rng(seed);
  TensorMap m;
  for (const auto& [name, shape] : shapes) m[name] = random_tensor(shape, DType::kFloat32, rng);
  return m;
}

// Builds: v = VIEW(x); v.add_(y); return (x, v, x * 1, v0) where v0 is a second view taken
// before the write and read after it.
std::unique_ptr<Graph> write_through(const std::function<Node*(GraphBuilder&, Node*)>& view) {
  GraphBuilder b("write_through");
  Node* x = b.placeholder("x");
  Node* y = b.placeholder("y");
  Node* before = b.call_function("aten.select.int", {x, 0, 1});
  Node* v = view(b, x);
  b.call_method("add_", {v, y});
  Node* read = b.call_function("torch.mul", {x, 1.0});
  b.output(arg::tuple({x, v, read, before}));
  return b.build();
}

struct ViewCase {
  const char* name;
  std::function<Node*(GraphBuilder&, Node*)> view;
  Shape y;
  bool needs_shapes = false;  // chunk sizes, as_strided of a view's offset
};

TEST(ViewWrite, WritesThroughEveryViewReachTheBaseAndEveryAlias) {
  std::vector<ViewCase> cases = {
      {"transpose",
       [](GraphBuilder& b, Node* x) {
         return b.call_method("transpose", {x, 0, 2});
       },
       {5, 4, 3}},
      {"t_of_select",
       [](GraphBuilder& b, Node* x) {
         return b.call_method("t", {b.call_function("_operator.getitem", {x, 1})});
       },
       {5, 4}},
      {"permute",
       [](GraphBuilder& b, Node* x) {
         return b.call_method("permute", {x, 2, 0, 1});
       },
       {5, 3, 4}},
      {"slice_step",
       [](GraphBuilder& b, Node* x) {
         return b.call_function("aten.slice.Tensor", {x, 1, 1, 4, 2});
       },
       {3, 2, 5}},
      {"select",
       [](GraphBuilder& b, Node* x) {
         return b.call_method("select", {x, 2, -1});
       },
       {3, 4}},
      {"narrow",
       [](GraphBuilder& b, Node* x) {
         return b.call_method("narrow", {x, 1, 1, 2});
       },
       {3, 2, 5}},
      {"diagonal",
       [](GraphBuilder& b, Node* x) {
         return b.call_method("diagonal", {x, 0, 1, 2});
       },
       {3, 4}},
      {"getitem_int",
       [](GraphBuilder& b, Node* x) {
         return b.call_function("_operator.getitem", {x, -1});
       },
       {4, 5}},
      {"getitem_tuple",
       [](GraphBuilder& b, Node* x) {
         return b.call_function(
             "_operator.getitem",
             {x, arg::tuple({arg::slice(0, 2), nullptr, 1, arg::slice(1, 5, 3)})});
       },
       {2, 1, 2}},
      {"split_piece",
       [](GraphBuilder& b, Node* x) {
         Node* parts = b.call_method("split", {x, 2, 1});
         return b.call_function("_operator.getitem", {parts, 1});
       },
       {3, 2, 5}},
      {"split_sizes_piece",
       [](GraphBuilder& b, Node* x) {
         Node* parts = b.call_method("split", {x, arg::list({1, 3})}, {{"dim", 1}});
         return b.call_function("_operator.getitem", {parts, 1});
       },
       {3, 3, 5}},
      {"chunk_piece",
       [](GraphBuilder& b, Node* x) {
         Node* parts = b.call_method("chunk", {x, 3, 2});
         return b.call_function("_operator.getitem", {parts, 2});
       },
       {3, 4, 1},
       true},
      {"unbind_piece",
       [](GraphBuilder& b, Node* x) {
         Node* parts = b.call_method("unbind", {x, 1});
         return b.call_function("_operator.getitem", {parts, 3});
       },
       {3, 5}},
      {"unsqueeze_view",
       [](GraphBuilder& b, Node* x) {
         Node* u = b.call_method("unsqueeze", {x, -1});
         return b.call_method("view", {u, 12, 5});
       },
       {12, 5}},
      {"as_strided",
       [](GraphBuilder& b, Node* x) {
         return b.call_function("torch.as_strided", {x, arg::list({2, 3}), arg::list({20, 2}), 1});
       },
       {2, 3}},
      {"as_strided_of_view",
       [](GraphBuilder& b, Node* x) {
         Node* s = b.call_function("_operator.getitem", {x, 1});
         return b.call_method("as_strided", {s, arg::list({4}), arg::list({6})});
       },
       {4},
       true},
      {"movedim",
       [](GraphBuilder& b, Node* x) {
         return b.call_method("movedim", {x, 0, -1});
       },
       {4, 5, 3}},
      {"chain",
       [](GraphBuilder& b, Node* x) {
         Node* t = b.call_method("transpose", {x, 0, 1});
         Node* s = b.call_function("_operator.getitem", {t, arg::tuple({arg::slice(1, 3), 0})});
         return b.call_method("unsqueeze", {s, 0});
       },
       {1, 2, 5}},
      {"detach_alias",
       [](GraphBuilder& b, Node* x) {
         return b.call_method("detach", {b.call_method("alias", {x})});
       },
       {3, 4, 5}},
  };
  for (const auto& vc : cases) {
    auto g = write_through(vc.view);
    TensorMap in = inputs({{"x", {3, 4, 5}}, {"y", vc.y}});
    Comparison c;
    EXPECT_TRUE(functional_matches_eager(*g, in, &c)) << vc.name;
    if (!c.program.graph) continue;
    EXPECT_EQ(c.program.context.io_map(), (std::map<int, int>{{0, 0}})) << vc.name;
    if (!vc.needs_shapes)
      EXPECT_TRUE(functional_matches_eager(*g, in, nullptr, false)) << vc.name << " (no shapes)";
  }
}

TEST(ViewWrite, WriteThroughTransposeScattersBackTransposed) {
  auto g = write_through([](GraphBuilder& b, Node* x) {
    return b.call_method("t", {b.call_function("_operator.getitem", {x, 0})});
  });
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, inputs({{"x", {3, 4, 5}}, {"y", {5, 4}}}), &c));
  const Graph& f = *c.program.graph;
  Node* xm = output_node(f, 0);
  ASSERT_NE(xm, nullptr);
  EXPECT_EQ(xm->name, "x_modified");
  EXPECT_EQ(xm->target, "aten.select_scatter.default");
  EXPECT_EQ(xm->args[1].node->target, "aten.t.default");
  EXPECT_EQ(xm->args[1].node->args[0].node->target, "aten.add.Tensor");
  // The view itself is the add's result; the view taken before is re-read from x_modified.
  EXPECT_EQ(output_node(f, 1)->target, "aten.add.Tensor");
  EXPECT_EQ(output_node(f, 3)->args[0].node, xm);
}

TEST(ViewWrite, AListOfViewsReadAfterAWriteSeesIt) {
  GraphBuilder b("list_read");
  Node* x = b.placeholder("x");
  Node* parts = b.call_method("split", {x, 2, 1});
  Node* piece = b.call_function("_operator.getitem", {parts, 0});
  b.call_method("mul_", {piece, -2.0});  // through a piece
  b.call_method("add_", {x, 1.0});       // through the base
  Node* joined = b.call_function("torch.cat", {parts, 1});
  b.output(arg::tuple({joined, piece}));
  auto g = b.build();
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, inputs({{"x", {3, 5}}}), &c));
  EXPECT_TRUE(functional_matches_eager(*g, inputs({{"x", {3, 5}}}), nullptr, false));
  // cat reads a split replayed on x's final value.
  Node* cat = output_node(*c.program.graph, 0);
  ASSERT_NE(cat, nullptr);
  EXPECT_EQ(cat->args[0].node->target, "aten.split.Tensor");
  EXPECT_EQ(cat->args[0].node->args[0].node->name, "x_modified_1");
}

TEST(ViewWrite, AugmentedAssignmentThroughAnIndex) {
  // x[1:3] += v as FX records it: getitem, operator.iadd on the view, setitem back.
  GraphBuilder b("iadd");
  Node* x = b.placeholder("x");
  Node* v = b.placeholder("v");
  Node* region = b.call_function("_operator.getitem", {x, arg::slice(1, 3)});
  Node* sum = b.call_function("_operator.iadd", {region, v});
  b.call_function("_operator.setitem", {x, arg::slice(1, 3), sum});
  b.output(arg::tuple({x}));
  auto g = b.build();
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, inputs({{"x", {4, 2}}, {"v", {2}}}), &c));
  EXPECT_EQ(c.program.context.io_map(), (std::map<int, int>{{0, 0}}));
}

TEST(ViewWrite, ReshapeThatCopiesDoesNotWriteBack) {
  // reshape of a transposed tensor copies: a write into it leaves x alone.
  GraphBuilder b("reshape_copy");
  Node* x = b.placeholder("x");
  Node* r = b.call_method("reshape", {b.call_method("t", {x}), -1});
  b.call_method("add_", {r, 1.0});
  Node* c0 = b.call_method("contiguous", {x});
  b.call_method("mul_", {c0, 2.0});  // contiguous() of a contiguous tensor is x itself
  b.output(arg::tuple({x, r}));
  auto g = b.build();
  EXPECT_TRUE(functional_matches_eager(*g, inputs({{"x", {3, 4}}})));
}

TEST(ViewWrite, TupleMixingTensorsAndIntsKeepsEachIndexOnItsDim) {
  GraphBuilder b("paged");
  Node* state = b.placeholder("state");
  Node* blocks = b.placeholder("blocks");
  Node* offsets = b.placeholder("offsets");
  Node* vals = b.placeholder("vals");
  b.call_function("_operator.setitem",
                  {state, arg::tuple({blocks, 0, offsets, arg::slice()}), vals});
  Node* s2 = b.call_function("_operator.getitem", {state, arg::tuple({arg::slice(), 1})});
  b.call_function("_operator.setitem", {s2, arg::tuple({arg::ellipsis(), offsets, 0}), -1.0});
  b.output(arg::tuple({state}));
  auto g = b.build();
  TensorMap in = inputs({{"state", {4, 2, 6, 3}}, {"vals", {2, 3}}});
  in["blocks"] = lt({3, 1}, {2});
  in["offsets"] = lt({5, 0}, {2});
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, in, &c));
  // state[3, 0, 5, :] and state[1, 0, 0, :] got the two rows.
  const Tensor& got = c.functional_inputs["state"].tensor;
  for (int64_t k = 0; k < 3; ++k) {
    EXPECT_EQ(got.at(((3 * 2 + 0) * 6 + 5) * 3 + k), in["vals"].at(k));
    EXPECT_EQ(got.at(((1 * 2 + 0) * 6 + 0) * 3 + k), in["vals"].at(3 + k));
  }
  EXPECT_EQ(count_target(*c.program.graph, "aten.index_put.default"), 2);
}

TEST(ViewWrite, IndexPutAccumulateKeepsAccumulating) {
  GraphBuilder b("accumulate");
  Node* x = b.placeholder("x");
  Node* idx = b.placeholder("idx");
  Node* v = b.placeholder("v");
  Node* row = b.call_function("_operator.getitem", {x, 1});
  b.call_function("aten.index_put_.default", {row, arg::list({idx}), v, true});
  b.call_method("index_put_", {x, arg::tuple({idx}), 1.0}, {{"accumulate", true}});
  b.output(arg::tuple({x}));
  auto g = b.build();
  TensorMap in = inputs({{"x", {4, 4}}});
  in["idx"] = lt({2, 2, 0, 2}, {4});
  in["v"] = ft({1, 2, 3, 4}, {4});
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, in, &c));
  const Tensor& got = c.functional_inputs["x"].tensor;
  EXPECT_FLOAT_EQ(got.at(1 * 4 + 2), in["x"].at(1 * 4 + 2) + 1 + 2 + 4);
  // Both stay accumulating index_puts; the first is scattered back into row 1.
  int accumulating = 0;
  for (Node* n : c.program.graph->nodes())
    if (n->target == "aten.index_put.default") accumulating += n->args[3].b;
  EXPECT_EQ(accumulating, 2);
  EXPECT_EQ(count_target(*c.program.graph, "aten.select_scatter.default"), 1);
}

TEST(ViewWrite, CopyAcrossDtypesCasts) {
  GraphBuilder b("copy_cast");
  Node* x = b.placeholder("x");
  Node* src = b.placeholder("src");
  Node* row = b.call_function("_operator.getitem", {x, 0});
  b.call_method("copy_", {row, src});
  b.output(arg::tuple({x}));
  auto g = b.build();
  TensorMap in = inputs({{"x", {2, 3}}});
  in["src"] = lt({7, -8, 9}, {3});
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, in, &c));
  EXPECT_EQ(c.functional_inputs["x"].tensor.dtype(), DType::kFloat32);
  EXPECT_EQ(c.functional_inputs["x"].tensor.at(1), -8.0);
  EXPECT_EQ(
      call_targets(*c.program.graph),
      (std::vector<std::string>{"_operator.getitem", "aten._to_copy.default",
                                "aten.slice_scatter.default", "aten.select_scatter.default"}));
  EXPECT_TRUE(functional_matches_eager(*g, in, nullptr, false));
}

TEST(ViewWrite, ComparisonInPlaceKeepsTheDtype) {
  GraphBuilder b("ge");
  Node* x = b.placeholder("x");
  Node* y = b.placeholder("y");
  b.call_method("ge_", {x, y});
  Node* s = b.call_function("torch.add", {x, 0.5});
  b.output(arg::tuple({x, s}));
  auto g = b.build();
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, inputs({{"x", {3, 3}}, {"y", {3, 3}}}), &c));
  EXPECT_EQ(c.functional.flat[0].tensor.dtype(), DType::kFloat32);
  EXPECT_EQ(
      call_targets(*c.program.graph),
      (std::vector<std::string>{"aten.ge.Tensor", "aten._to_copy.default", "aten.add.Tensor"}));
  EXPECT_EQ(c.program.graph->find("x_modified")->target, "aten._to_copy.default");
  EXPECT_TRUE(functional_matches_eager(*g, inputs({{"x", {3, 3}}, {"y", {3, 3}}}), nullptr, false));
}

TEST(ViewWrite, ResultOfAnEarlierInPlaceOpSeesLaterWrites) {
  GraphBuilder b("first");
  Node* x = b.placeholder("x");
  Node* y = b.placeholder("y");
  Node* first = b.call_method("add_", {x, y});
  b.call_method("clamp_", {x}, {{"min", 0}});
  Node* row = b.call_function("_operator.getitem", {first, 0});
  b.call_method("mul_", {row, 10.0});
  b.output(arg::tuple({first, row}));
  auto g = b.build();
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, inputs({{"x", {3, 2}}, {"y", {3, 2}}}), &c));
  // first is x after both writes: clamped and scaled.
  const Tensor& got = c.functional.flat[0].tensor;
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_GE(got.at(i), 0.0);
  EXPECT_EQ(c.program.context.io_map(), (std::map<int, int>{{0, 0}}));
}

TEST(ViewWrite, AtenLevelGraphs) {
  GraphBuilder b("aten");
  Node* x = b.placeholder("x");
  Node* y = b.placeholder("y");
  Node* idx = b.placeholder("idx");
  b.call_function("torch.ops.aten.add_.Tensor", {x, y});
  Node* rows = b.call_function("aten.slice.Tensor", {x, 0, 1, 3});
  Node* cols = b.call_function("aten.slice.Tensor", {rows, 1, 0, 2});
  Node* c = b.get_attr("_tensor_constant0", ft({5, 6}, {2}));
  Node* fresh = b.call_function("aten.lift_fresh_copy.default", {c});
  b.call_function("aten.copy_.default", {cols, fresh});
  b.call_function("aten.index_put_.default", {x, arg::list({idx}), y, false});
  Node* zero = b.call_function("aten.scalar_tensor.default", {2.5});
  Node* col = b.call_function("aten.select.int", {x, 1, 3});
  b.call_function("aten.fill_.Tensor", {col, zero});
  b.output(arg::tuple({x}));
  auto g = b.build();
  TensorMap in = inputs({{"x", {4, 4}}, {"y", {4}}});
  in["idx"] = lt({2}, {1});
  Comparison cmp;
  ASSERT_TRUE(functional_matches_eager(*g, in, &cmp));
  EXPECT_TRUE(functional_matches_eager(*g, in, nullptr, false));
  for (const std::string& t : call_targets(*cmp.program.graph))
    EXPECT_EQ(t.find("_."), std::string::npos) << t;  // nothing in-place is left
}

TEST(ViewWrite, BuffersAreNumberedAfterPlaceholders) {
  GraphBuilder b("buffers");
  Node* k = b.placeholder("k");
  Node* pos = b.placeholder("pos");
  Node* counter = b.get_attr("counter", Tensor::zeros({}, DType::kInt64));
  Node* cache = b.get_attr("cache", Tensor::zeros({2, 8, 4}, DType::kFloat32));
  Node* weight = b.get_attr("weight", ft({1, 2, 3, 4}, {4}));
  b.call_function("_operator.setitem", {cache, arg::tuple({arg::slice(), pos}),
                                        b.call_function("torch.mul", {k, weight})});
  b.call_method("add_", {counter, 1});
  Node* again = b.get_attr("cache");  // a second read of the same buffer sees the write
  Node* s = b.call_method("sum", {again});
  b.output(arg::tuple({s}));
  auto g = b.build();
  TensorMap in = inputs({{"k", {2, 4}}});
  in["pos"] = Tensor::scalar(3, DType::kInt64);
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, in, &c));
  const PassContext& ctx = c.program.context;
  EXPECT_EQ(ctx.num_placeholders, 2);
  EXPECT_EQ(ctx.input_names, (std::vector<std::string>{"k", "pos", "counter", "cache"}));
  EXPECT_EQ(ctx.io_map(), (std::map<int, int>{{1, 2}, {2, 3}}));
  ASSERT_EQ(ctx.mutations.size(), 2u);
  EXPECT_TRUE(ctx.is_buffer(ctx.mutations[0].input));
  EXPECT_EQ(ctx.input_names[ctx.mutations[1].input], "cache");
  EXPECT_EQ(c.functional_state["counter"].item().to_int(), 1);
}

TEST(ViewWrite, MutatedIntermediateGetsNoIoMapEntry) {
  GraphBuilder b("intermediate");
  Node* x = b.placeholder("x");
  Node* y = b.call_function("torch.mul", {x, 2.0});
  Node* row = b.call_function("_operator.getitem", {y, 0});
  b.call_method("add_", {row, 1.0});
  b.output(arg::tuple({y}));
  auto g = b.build();
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, inputs({{"x", {2, 3}}}), &c));
  EXPECT_TRUE(c.program.context.io_map().empty());
  EXPECT_EQ(output_node(*c.program.graph, 0)->name, "mul_modified");
}

TEST(ViewWrite, MutatedFreshTupleElementIsSharedByEveryGetitem) {
  GraphBuilder b("tuple_elements");
  Node* x = b.placeholder("x");
  Node* mx = b.call_function("torch.max", {x, 1});
  Node* values = b.call_function("_operator.getitem", {mx, 0});
  Node* again = b.call_function("_operator.getitem", {mx, 0});
  b.call_method("mul_", {values, -1.0});
  b.output(arg::tuple({again}));
  auto g = b.build();
  EXPECT_TRUE(functional_matches_eager(*g, inputs({{"x", {3, 4}}})));
}

TEST(ViewWrite, WriteThroughBroadcastingExpandIsRefused) {
  GraphBuilder b("expand");
  Node* x = b.placeholder("x");
  Node* e = b.call_method("expand", {x, 3, 4});
  b.call_function("_operator.setitem", {e, 0, 1.0});
  b.output(x);
  auto g = b.build();
  PassContext ctx;
  ctx.options.input_metas["x"] = Meta{Shape{1, 4}, DType::kFloat32, {}};
  try {
    functionalize(*g, ctx);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expand"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("setitem"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace inplace::testing
