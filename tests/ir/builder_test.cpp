// GraphBuilder: graphs written by hand come out as FX would record them.
#include "ir/builder.h"

#include "test_util.h"

namespace inplace {
namespace {

using namespace inplace::testing;

TEST(GraphBuilder, BuildsAnFxStyleGraph) {
  GraphBuilder b("kv_update");
  Node* cache = b.get_attr("layer.cache", Tensor::zeros({1, 4, 8}, DType::kFloat32));
  Node* k = b.placeholder("k");
  Node* pos = b.placeholder("pos", 0);
  Node* set = b.call_function("_operator.setitem",
                              {cache, arg::tuple({arg::slice(), pos, arg::ellipsis()}), k});
  Node* view = b.call_method("view", {cache, 4, 8});
  Node* sum = b.call_function("torch.sum", {view}, {{"dim", arg::ints({0})}, {"keepdim", true}});
  b.outputs({cache, sum});
  EXPECT_EQ(cache->name, "layer_cache");
  EXPECT_EQ(cache->target, "layer.cache");
  EXPECT_EQ(set->name, "setitem");
  EXPECT_EQ(view->op, NodeOp::kCallMethod);
  auto g = b.build();
  EXPECT_EQ(g->to_string(),
            "graph kv_update():\n"
            "    %layer_cache = get_attr[target=layer.cache](args = (), kwargs = {})\n"
            "    %k = placeholder[target=k](args = (), kwargs = {})\n"
            "    %pos = placeholder[target=pos](args = (0,), kwargs = {})\n"
            "    %setitem = call_function[target=_operator.setitem](args = (%layer_cache, "
            "(slice(None, None, None), %pos, Ellipsis), %k), kwargs = {})\n"
            "    %view = call_method[target=view](args = (%layer_cache, 4, 8), kwargs = {})\n"
            "    %sum = call_function[target=torch.sum](args = (%view,), kwargs = {dim: [0], "
            "keepdim: True})\n"
            "    %output = output[target=output](args = ((%layer_cache, %sum),), kwargs = {})\n");
  EXPECT_EQ(g->constants.at("layer.cache").shape(), (Shape{1, 4, 8}));
  EXPECT_EQ(g->users(cache).size(), 3u);
}

TEST(GraphBuilder, ArgumentsConvertLikePython) {
  GraphBuilder b;
  Node* x = b.placeholder("x");
  Node* n = b.call_function(
      "f", {x, 3, int64_t{1} << 40, 2.5, 1.0f, true, nullptr, "mean", DType::kBFloat16,
            ft({1, 2}, {2}), arg::list({1, x}), arg::slice(1, nullptr, -1), arg::device("cpu"),
            arg::dict({{"b", 1}, {"a", 2.0}}), arg::none()});
  using K = Value::Kind;
  const std::vector<K> kinds = {K::kNode, K::kInt,   K::kInt,    K::kFloat, K::kFloat,
                                K::kBool, K::kNone,  K::kString, K::kDType, K::kTensor,
                                K::kList, K::kSlice, K::kDevice, K::kDict,  K::kNone};
  ASSERT_EQ(n->args.size(), kinds.size());
  for (size_t i = 0; i < kinds.size(); ++i)
    EXPECT_EQ(n->args[i].kind, kinds[i]) << "argument " << i << " is " << n->args[i].kind_name();
  EXPECT_EQ(n->args[0].node, x);
  EXPECT_EQ(n->args[2].i, int64_t{1} << 40);
  EXPECT_EQ(n->args[4].f, 1.0);
  EXPECT_EQ(n->args[8].dtype, DType::kBFloat16);
  EXPECT_EQ(n->args[10].items[1].node, x);
  EXPECT_EQ(n->args[11].items[0].i, 1);
  EXPECT_TRUE(n->args[11].items[1].is_none());
  EXPECT_EQ(n->args[11].items[2].i, -1);
  EXPECT_EQ(n->args[13].keys, (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(n->args[13].items[1].f, 2.0);
}

TEST(GraphBuilder, NamesAndReuse) {
  GraphBuilder b;
  Node* x = b.placeholder("x");
  Node* a1 = b.call_method("add_", {x, 1});
  Node* a2 = b.call_method("add_", {a1, 1});
  Node* named = b.call_function("torch.add", {a2, 1}, {}, "my_sum");
  Node* c1 = b.get_attr("w", iota({2}));
  Node* c2 = b.get_attr("w");
  b.set_meta(named, {2}, DType::kFloat64);
  b.output(arg::tuple({named, c1, c2}));
  EXPECT_EQ(a1->name, "add_");
  EXPECT_EQ(a2->name, "add__1");
  EXPECT_EQ(named->name, "my_sum");
  EXPECT_EQ(c1->name, "w");
  EXPECT_EQ(c2->name, "w_1");
  EXPECT_EQ(c2->target, "w");
  EXPECT_EQ(*named->meta.shape, (Shape{2}));
  EXPECT_EQ(*named->meta.dtype, DType::kFloat64);
  auto g = b.build();
  EXPECT_EQ(g->constants.size(), 1u);
}

TEST(GraphBuilder, MistakesAreErrors) {
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  GraphBuilder b;
  Node* x = b.placeholder("x");
  b.get_attr("w", iota({2}));
  EXPECT_NE(message([&] { b.placeholder("x"); }).find("placeholder 'x': the name is already taken"),
            std::string::npos);
  EXPECT_NE(message([&] { b.get_attr("w", iota({3})); }).find("constant 'w' is already registered"),
            std::string::npos);
  EXPECT_NE(message([&] { b.get_attr("v"); }).find("no constant 'v' registered"),
            std::string::npos);
  EXPECT_NE(message([&] { b.call_method("add_", {}); }).find("needs self"), std::string::npos);
  EXPECT_NE(message([&] { b.build(); }).find("has 0 output nodes"), std::string::npos);
  b.output(x);
  EXPECT_NE(message([&] { b.output(x); }).find("already has an output node"), std::string::npos);
  auto g = b.build();
  EXPECT_EQ(g->output()->args[0].node, g->find("x"));
  EXPECT_NE(message([&] { b.build(); }).find("already handed the graph over"), std::string::npos);
  EXPECT_NE(message([&] { b.placeholder("y"); }).find("already handed the graph over"),
            std::string::npos);
}

TEST(GraphBuilder, NodesAfterOutputGoBeforeIt) {
  // Like FX's graph.inserting_before(output): a node added late still precedes the output.
  GraphBuilder b;
  Node* x = b.placeholder("x");
  b.output(x);
  Node* y = b.call_function("torch.neg", {x});
  auto order = b.graph().order();
  EXPECT_LT(order.at(y), order.at(b.graph().output()));
  b.graph().output()->args[0] = Value::node_ref(y);
  EXPECT_NO_THROW(b.build());
}

}  // namespace
}  // namespace inplace
