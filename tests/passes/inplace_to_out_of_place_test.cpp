// inplace_to_out_of_place on every case of the seed pass: general in-place methods, copy_,
// setitem with every index form, scalar values, downstream reference rewriting and naming.
#include "pass_test_util.h"

namespace inplace::testing {
namespace {

using Targets = std::vector<std::string>;

TensorMap inputs(std::initializer_list<std::pair<std::string, Shape>> shapes, int seed = 1,
                 DType dtype = DType::kFloat32) {
  std::mt19937 rng(seed);
  TensorMap m;
  for (const auto& [name, shape] : shapes) m[name] = random_tensor(shape, dtype, rng);
  return m;
}

TEST(InplaceToOutOfPlace, AddBecomesAddNamedAfterTheInput) {
  GraphBuilder b("add");
  Node* x = b.placeholder("x");
  Node* y = b.placeholder("y");
  b.call_method("add_", {x, y});
  b.output(arg::tuple({x}));
  auto g = b.build();
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, inputs({{"x", {3, 4}}, {"y", {3, 4}}}), &c));
  const Graph& f = *c.program.graph;
  EXPECT_EQ(call_targets(f), Targets{"aten.add.Tensor"});
  ASSERT_NE(output_node(f, 0), nullptr);
  EXPECT_EQ(output_node(f, 0)->name, "x_modified");
  EXPECT_EQ(c.program.context.io_map(), (std::map<int, int>{{0, 0}}));
  EXPECT_EQ(c.program.context.original_output_count, 1);
  // The same without shapes.
  EXPECT_TRUE(functional_matches_eager(*g, inputs({{"x", {3, 4}}, {"y", {3, 4}}}), nullptr, false));
}

TEST(InplaceToOutOfPlace, ChainedMutationsEachReadThePreviousValue) {
  GraphBuilder b("chain");
  Node* x = b.placeholder("x");
  Node* y = b.placeholder("y");
  Node* z = b.placeholder("z");
  b.call_method("add_", {x, y});
  Node* w = b.call_function("torch.mul", {x, 2.0});  // reads x after add_
  b.call_method("mul_", {x, z});
  b.output(arg::tuple({x, w}));
  auto g = b.build();
  Comparison c;
  ASSERT_TRUE(
      functional_matches_eager(*g, inputs({{"x", {2, 3}}, {"y", {2, 3}}, {"z", {2, 3}}}), &c));
  const Graph& f = *c.program.graph;
  EXPECT_EQ(call_targets(f), (Targets{"aten.add.Tensor", "aten.mul.Tensor", "aten.mul.Tensor"}));
  Node* first = f.find("x_modified");
  Node* second = f.find("x_modified_1");
  ASSERT_TRUE(first && second);
  EXPECT_EQ(second->args[0].node, first);  // mul_ reads add_'s result
  EXPECT_EQ(output_node(f, 0), second);
  EXPECT_EQ(output_node(f, 1)->args[0].node, first);  // the read in between sees add_ only
  EXPECT_EQ(c.program.context.io_map(), (std::map<int, int>{{0, 0}}));
}

TEST(InplaceToOutOfPlace, MutatedInputNotReturnedIsAppendedAsOutput) {
  GraphBuilder b("append");
  Node* x = b.placeholder("x");
  Node* y = b.placeholder("y");
  b.call_method("sub_", {y, 1.5});
  Node* s = b.call_function("torch.add", {x, y});
  b.output(s);
  auto g = b.build();
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, inputs({{"x", {4}}, {"y", {4}}}), &c));
  const PassContext& ctx = c.program.context;
  EXPECT_EQ(ctx.original_output_count, 1);
  EXPECT_TRUE(ctx.output_wrapped);
  EXPECT_EQ(ctx.io_map(), (std::map<int, int>{{1, 1}}));  // y is input 1
  EXPECT_EQ(output_node(*c.program.graph, 1)->name, "y_modified");
  ASSERT_EQ(ctx.mutations.size(), 1u);
  EXPECT_EQ(ctx.input_names[ctx.mutations[0].input], "y");
  EXPECT_FALSE(ctx.is_buffer(ctx.mutations[0].input));
  EXPECT_EQ(c.functional.flat.size(), 1u);  // the runner hands back the original outputs only
}

TEST(InplaceToOutOfPlace, CopyBecomesExpandAsAndSliceScatter) {
  GraphBuilder b("copy");
  Node* dest = b.placeholder("dest");
  Node* src = b.placeholder("src");
  b.call_method("copy_", {dest, src});
  b.output(arg::tuple({dest}));
  auto g = b.build();
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, inputs({{"dest", {32, 64}}, {"src", {1, 64}}}), &c));
  const Graph& f = *c.program.graph;
  EXPECT_EQ(call_targets(f), (Targets{"aten.expand_as.default", "aten.slice_scatter.default"}));
  Node* out = output_node(f, 0);
  EXPECT_EQ(out->name, "dest_modified");
  EXPECT_EQ(out->args[0].node->name, "dest");
  EXPECT_EQ(out->args[1].node->target, "aten.expand_as.default");
  EXPECT_TRUE(
      functional_matches_eager(*g, inputs({{"dest", {32, 64}}, {"src", {1, 64}}}), nullptr, false));
}

TEST(InplaceToOutOfPlace, SetitemIntIsSelectScatter) {
  for (int64_t index : {3, -1, 0}) {
    GraphBuilder b("setitem_int");
    Node* buf = b.placeholder("buf");
    Node* value = b.placeholder("value");
    b.call_function("_operator.setitem", {buf, index, value});
    b.output(arg::tuple({buf}));
    auto g = b.build();
    Comparison c;
    ASSERT_TRUE(functional_matches_eager(*g, inputs({{"buf", {5, 4}}, {"value", {4}}}), &c))
        << index;
    const Graph& f = *c.program.graph;
    EXPECT_EQ(call_targets(f), Targets{"aten.select_scatter.default"});
    Node* out = output_node(f, 0);
    EXPECT_EQ(out->name, "buf_modified");
    EXPECT_EQ(out->args[2].i, 0);  // dim
    EXPECT_EQ(out->args[3].i, index);
    EXPECT_TRUE(
        functional_matches_eager(*g, inputs({{"buf", {5, 4}}, {"value", {4}}}), nullptr, false));
  }
}

TEST(InplaceToOutOfPlace, SetitemScalarIsPromotedToATensor) {
  GraphBuilder b("setitem_scalar");
  Node* buf = b.placeholder("buf");
  b.call_function("_operator.setitem", {buf, 2, 0.5});
  b.call_function("_operator.setitem", {buf, arg::slice(1, 3), -7});
  b.output(arg::tuple({buf}));
  auto g = b.build();
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, inputs({{"buf", {5, 3}}}), &c));
  const Graph& f = *c.program.graph;
  EXPECT_EQ(call_targets(f),
            (Targets{"aten.select.int", "aten.full_like.default", "aten.select_scatter.default",
                     "aten.slice.Tensor", "aten.full_like.default", "aten.slice_scatter.default"}));
  EXPECT_EQ(output_node(f, 0)->name, "buf_modified_1");
  EXPECT_TRUE(functional_matches_eager(*g, inputs({{"buf", {5, 3}}}), nullptr, false));
  // An int tensor takes the number truncated, as torch does.
  EXPECT_TRUE(functional_matches_eager(*g, inputs({{"buf", {5, 3}}}, 2, DType::kInt64)));
}

TEST(InplaceToOutOfPlace, SetitemSliceForms) {
  // [start:stop:step] forms: the fast path, explicit bounds, steps, negative starts.
  std::vector<Value> slices = {arg::slice(nullptr, 32), arg::slice(2, 8),     arg::slice(1, 8, 2),
                               arg::slice(-3, nullptr), arg::slice(0, 40, 3), arg::slice(5, 5)};
  for (const Value& s : slices) {
    GraphBuilder b("setitem_slice");
    Node* cache = b.placeholder("kv_cache");
    Node* keys = b.placeholder("new_keys");
    Node* region = b.call_function("_operator.getitem", {cache, s});
    Node* fitted = b.call_method("expand_as", {keys, region});
    b.call_function("_operator.setitem", {cache, s, fitted});
    b.output(arg::tuple({cache}));
    auto g = b.build();
    Comparison c;
    ASSERT_TRUE(
        functional_matches_eager(*g, inputs({{"kv_cache", {40, 4}}, {"new_keys", {1, 4}}}), &c))
        << s.to_string();
    const Graph& f = *c.program.graph;
    Node* out = output_node(f, 0);
    EXPECT_EQ(out->name, "kv_cache_modified");
    EXPECT_EQ(out->target, "aten.slice_scatter.default");
    EXPECT_EQ(out->args[0].node->name, "kv_cache");
    EXPECT_EQ(out->args[3].to_string(), s.items[0].to_string());
    EXPECT_EQ(out->args[4].to_string(), s.items[1].to_string());
    EXPECT_TRUE(functional_matches_eager(*g, inputs({{"kv_cache", {40, 4}}, {"new_keys", {1, 4}}}),
                                         nullptr, false));
  }
}

TEST(InplaceToOutOfPlace, SeedKvCacheExample) {
  GraphBuilder b("kv");
  Node* cache = b.placeholder("kv_cache");
  Node* keys = b.placeholder("new_keys");
  b.call_function("_operator.setitem", {cache, arg::slice(0, 32), keys});
  b.output(arg::tuple({cache}));
  auto g = b.build();
  Comparison c;
  ASSERT_TRUE(
      functional_matches_eager(*g, inputs({{"kv_cache", {48, 8}}, {"new_keys", {32, 8}}}), &c));
  const Graph& f = *c.program.graph;
  EXPECT_EQ(call_targets(f), Targets{"aten.slice_scatter.default"});
  Node* out = output_node(f, 0);
  EXPECT_EQ(out->to_string(),
            "kv_cache_modified = call_function[target=aten.slice_scatter.default](args = "
            "(%kv_cache, %new_keys, 0, 0, 32, 1), kwargs = {})");
  EXPECT_EQ(c.program.context.io_map(), (std::map<int, int>{{0, 0}}));
}

TEST(InplaceToOutOfPlace, SetitemTupleOfSlicesScattersThroughEachDim) {
  GraphBuilder b("tuple");
  Node* buf = b.placeholder("buf");
  Node* value = b.placeholder("value");
  b.call_function("_operator.setitem",
                  {buf, arg::tuple({arg::slice(2, 4), arg::slice(), arg::slice(1, 3)}), value});
  b.output(arg::tuple({buf}));
  auto g = b.build();
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, inputs({{"buf", {6, 3, 5}}, {"value", {2, 3, 2}}}), &c));
  const Graph& f = *c.program.graph;
  // Forward: slice dim 0; inner scatter into dim 2; reverse: scatter back into dim 0.
  EXPECT_EQ(call_targets(f), (Targets{"aten.slice.Tensor", "aten.slice_scatter.default",
                                      "aten.slice_scatter.default"}));
  Node* out = output_node(f, 0);
  EXPECT_EQ(out->args[2].i, 0);
  Node* inner = out->args[1].node;
  EXPECT_EQ(inner->args[2].i, 2);
  EXPECT_EQ(inner->args[0].node->target, "aten.slice.Tensor");
  EXPECT_TRUE(functional_matches_eager(*g, inputs({{"buf", {6, 3, 5}}, {"value", {2, 3, 2}}}),
                                       nullptr, false));
}

TEST(InplaceToOutOfPlace, SetitemWithEllipsis) {
  std::vector<Value> indices = {
      arg::tuple({arg::ellipsis(), 0}),
      arg::tuple({1, arg::ellipsis(), arg::slice(1, 3)}),
      arg::tuple({arg::ellipsis(), arg::slice(0, 2), -1}),
      arg::tuple({arg::slice(), arg::ellipsis(), nullptr, 2}),
      arg::tuple({nullptr, 1, arg::ellipsis()}),
  };
  for (const Value& idx : indices) {
    for (bool scalar : {false, true}) {
      GraphBuilder b("ellipsis");
      Node* buf = b.placeholder("buf");
      Node* v = b.placeholder("v");
      Node* region = b.call_function("_operator.getitem", {buf, idx});
      Node* value = b.call_function("torch.add", {region, v});
      b.call_function("_operator.setitem", {buf, idx, scalar ? Arg(3.25) : Arg(value)});
      b.output(arg::tuple({buf, region}));
      auto g = b.build();
      EXPECT_TRUE(functional_matches_eager(*g, inputs({{"buf", {3, 4, 5}}, {"v", {1}}})))
          << idx.to_string();
      EXPECT_TRUE(
          functional_matches_eager(*g, inputs({{"buf", {3, 4, 5}}, {"v", {1}}}), nullptr, false))
          << idx.to_string();
    }
  }
}

TEST(InplaceToOutOfPlace, SetitemBoolMaskWithScalarIsWhere) {
  GraphBuilder b("mask");
  Node* buf = b.placeholder("buf");
  Node* mask = b.call_function("torch.gt", {buf, 0.0});
  b.call_function("_operator.setitem", {buf, mask, 0.0});
  b.output(arg::tuple({buf}));
  auto g = b.build();
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, inputs({{"buf", {4, 5}}}), &c));
  Targets t = call_targets(*c.program.graph);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[1], "aten.where.self");  // after the mask's gt
  EXPECT_EQ(output_node(*c.program.graph, 0)->name, "buf_modified");
  EXPECT_TRUE(functional_matches_eager(*g, inputs({{"buf", {4, 5}}}), nullptr, false));
}

TEST(InplaceToOutOfPlace, SetitemBoolMaskWithVectorIsMaskedScatter) {
  // x[mask] = v with one value per selected element: masked_scatter, not where.
  GraphBuilder b("mask_vector");
  Node* buf = b.placeholder("buf");
  Node* mask = b.placeholder("mask");
  Node* vals = b.placeholder("vals");
  b.call_function("_operator.setitem", {buf, mask, vals});
  b.output(arg::tuple({buf}));
  auto g = b.build();
  TensorMap in = inputs({{"buf", {3, 4}}});
  in["mask"] =
      bt({true, false, true, true, false, false, false, true, false, true, false, false}, {3, 4});
  in["vals"] = ft({10, 20, 30, 40, 50}, {5});
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, in, &c));
  EXPECT_EQ(count_target(*c.program.graph, "aten.masked_scatter.default"), 1);
  EXPECT_TRUE(
      tensor_near(c.functional_inputs["buf"].tensor, {3, 4},
                  {10, in["buf"].at(1), 20, 30, in["buf"].at(4), in["buf"].at(5), in["buf"].at(6),
                   40, in["buf"].at(8), 50, in["buf"].at(10), in["buf"].at(11)}));
  // Row masks: a mask over the leading dim with rows of values.
  GraphBuilder b2("mask_rows");
  Node* buf2 = b2.placeholder("buf");
  Node* mask2 = b2.placeholder("mask");
  Node* rows = b2.placeholder("rows");
  b2.call_function("_operator.setitem", {buf2, mask2, rows});
  b2.output(arg::tuple({buf2}));
  auto g2 = b2.build();
  TensorMap in2 = inputs({{"buf", {4, 3}}, {"rows", {2, 3}}});
  in2["mask"] = bt({false, true, false, true}, {4});
  EXPECT_TRUE(functional_matches_eager(*g2, in2));
  EXPECT_TRUE(functional_matches_eager(*g2, in2, nullptr, false));
  // One row for every selected row: uniform, so where.
  std::mt19937 rng(3);
  in2["rows"] = random_tensor({3}, DType::kFloat32, rng);
  Comparison c2;
  ASSERT_TRUE(functional_matches_eager(*g2, in2, &c2));
  EXPECT_EQ(count_target(*c2.program.graph, "aten.where.self"), 1);
}

TEST(InplaceToOutOfPlace, SetitemIntTensorIndexIsIndexPut) {
  GraphBuilder b("index");
  Node* buf = b.placeholder("buf");
  Node* idx = b.placeholder("idx");
  Node* v = b.placeholder("v");
  b.call_function("_operator.setitem", {buf, idx, v});
  b.call_function("_operator.setitem", {buf, arg::list({0, 2}), 1.0});
  b.output(arg::tuple({buf}));
  auto g = b.build();
  TensorMap in = inputs({{"buf", {5, 3}}, {"v", {2, 3}}});
  in["idx"] = lt({4, 1}, {2});
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, in, &c));
  EXPECT_EQ(count_target(*c.program.graph, "aten.index_put.default"), 2);
  EXPECT_TRUE(functional_matches_eager(*g, in, nullptr, false));
}

TEST(InplaceToOutOfPlace, DownstreamReferencesInNestedValuesAreRewritten) {
  GraphBuilder b("nested");
  Node* x = b.placeholder("x");
  Node* y = b.placeholder("y");
  Node* before = b.call_function("torch.cat", {arg::list({x, y})});
  b.call_method("mul_", {x, 3.0});
  Node* after = b.call_function("torch.cat", {arg::list({x, y})}, {{"dim", 0}});
  Node* stacked = b.call_function("torch.stack", {arg::tuple({y, x})});
  b.output(arg::tuple({before, after, arg::list({x, arg::tuple({stacked, x})})}));
  auto g = b.build();
  Comparison c;
  ASSERT_TRUE(functional_matches_eager(*g, inputs({{"x", {2, 2}}, {"y", {2, 2}}}), &c));
  const Graph& f = *c.program.graph;
  Node* xm = f.find("x_modified");
  ASSERT_NE(xm, nullptr);
  EXPECT_EQ(output_node(f, 0)->args[0].items[0].node->name, "x");  // before the write
  EXPECT_EQ(output_node(f, 1)->args[0].items[0].node, xm);
  EXPECT_EQ(output_node(f, 2), xm);
  EXPECT_EQ(output_node(f, 3)->args[0].items[1].node, xm);
  EXPECT_EQ(output_node(f, 4), xm);
  // The first leaf that is x's final value holds it for the io_map.
  EXPECT_EQ(c.program.context.io_map(), (std::map<int, int>{{2, 0}}));
}

TEST(InplaceToOutOfPlace, InPlaceOpWithoutOutOfPlaceFormIsAnError) {
  GraphBuilder b("bad");
  Node* x = b.placeholder("x");
  b.call_method("frobnicate_", {x}, {}, "frob");
  b.output(x);
  auto g = b.build();
  PassContext ctx;
  try {
    functionalize(*g, ctx);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'frobnicate_' is not supported"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("frob"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace inplace::testing
