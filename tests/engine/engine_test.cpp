// Engine behaviour on hand-written functional graphs: aliasing decisions, in-place identity,
// values equal to the eager interpreter, copy-back engine, errors leaving memory intact.
#include <gtest/gtest.h>

#include "engine/execution_context.h"
#include "interpreter/interpreter.h"
#include "test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

Value N(Node* n) {
  return Value::node_ref(n);
}

struct Built {
  std::shared_ptr<const Engine> engine;
};

std::shared_ptr<const Engine> build(const Graph& g, std::vector<Mutation> io,
                                    std::vector<Tensor> ex, bool alias = true) {
  EngineOptions o;
  o.alias = alias;
  return Engine::build(g, io, 1, ex, o);
}

// cache [2,4,16,8]; out = slice_scatter(cache, k, 2, 3, 4) -> mutates cache; plus a read.
std::unique_ptr<Graph> slice_write_graph(bool read_old_after) {
  auto g = std::make_unique<Graph>();
  Node* cache = g->add_node(NodeOp::kPlaceholder, "cache", {}, {}, "cache");
  Node* k = g->add_node(NodeOp::kPlaceholder, "k", {}, {}, "k");
  Node* w = g->add_node(NodeOp::kCallFunction, "aten.slice_scatter.default",
                        {N(cache), N(k), I(2), I(3), I(4)});
  Node* s = g->add_node(NodeOp::kCallFunction, "aten.sum.default", {N(read_old_after ? cache : w)});
  g->add_node(NodeOp::kOutput, "output", {Tup({N(s), N(w)})});
  return g;
}

TEST(Engine, SliceWriteGoesStraightIntoTheCache) {
  auto g = slice_write_graph(false);
  Tensor cache = Tensor::zeros({2, 4, 16, 8}, DType::kFloat32);
  Tensor k = Tensor::full({2, 4, 1, 8}, Scalar(1.0), DType::kFloat32);
  auto engine = build(*g, {{1, 0}}, {cache, k});
  ASSERT_EQ(engine->aliased_io().size(), 1u);
  EXPECT_EQ(engine->aliased_io()[0].input, 0);
  EXPECT_EQ(engine->plan().steps[0].writes_binding, "cache");
  ExecutionContext ctx(engine);
  void* addr = cache.data_ptr();
  ctx.bind_input(0, cache);
  ctx.bind_input(1, k);
  auto out = ctx.execute();
  EXPECT_EQ(out[1].data_ptr(), addr);
  EXPECT_EQ(out[1].storage(), cache.storage());
  EXPECT_DOUBLE_EQ(out[0].item().to_double(), 64.0);
  EXPECT_EQ(cache.slice(2, 3, 4).to_double_vector(), std::vector<double>(64, 1.0));
  EXPECT_DOUBLE_EQ(cache.slice(2, 0, 3).to_double_vector()[5], 0.0);
}

TEST(Engine, ReadOfOldValueAfterWriteForcesTemporaryAndCopy) {
  auto g = slice_write_graph(true);
  Tensor cache = Tensor::full({2, 4, 16, 8}, Scalar(2.0), DType::kFloat32);
  Tensor k = Tensor::full({2, 4, 1, 8}, Scalar(1.0), DType::kFloat32);
  auto engine = build(*g, {{1, 0}}, {cache, k});
  ASSERT_EQ(engine->aliased_io().size(), 1u);
  bool has_copy = false;
  for (const Step& s : engine->plan().steps) has_copy |= s.kind == StepKind::kCopy;
  EXPECT_TRUE(has_copy) << engine->describe();
  ExecutionContext ctx(engine);
  ctx.bind_input(0, cache);
  ctx.bind_input(1, k);
  auto out = ctx.execute();
  EXPECT_DOUBLE_EQ(out[0].item().to_double(), 2.0 * 2 * 4 * 16 * 8);  // the old cache
  EXPECT_EQ(out[1].storage(), cache.storage());
  EXPECT_DOUBLE_EQ(cache.slice(2, 3, 4).to_double_vector()[0], 1.0);
}

TEST(Engine, CopyBackEngineHasNoAliasesAndSameValues) {
  auto g = slice_write_graph(false);
  Tensor cache = Tensor::zeros({2, 4, 16, 8}, DType::kFloat32);
  Tensor k = Tensor::full({2, 4, 1, 8}, Scalar(1.0), DType::kFloat32);
  auto engine = build(*g, {{1, 0}}, {cache, k}, /*alias=*/false);
  EXPECT_TRUE(engine->aliased_io().empty());
  ExecutionContext ctx(engine);
  ctx.bind_input(0, cache);
  ctx.bind_input(1, k);
  auto out = ctx.execute();
  EXPECT_DOUBLE_EQ(out[0].item().to_double(), 64.0);
  EXPECT_EQ(cache.slice(2, 3, 4).to_double_vector(), std::vector<double>(64, 1.0));
}

TEST(Engine, FunctionalSliceScatterLeavesInputUntouched) {
  auto g = slice_write_graph(false);
  Tensor cache = Tensor::zeros({2, 4, 16, 8}, DType::kFloat32);
  Tensor k = Tensor::full({2, 4, 1, 8}, Scalar(1.0), DType::kFloat32);
  auto engine = build(*g, {}, {cache, k});  // no mutation declared
  EXPECT_TRUE(engine->aliased_io().empty());
  ExecutionContext ctx(engine);
  ctx.bind_input(0, cache);
  ctx.bind_input(1, k);
  auto out = ctx.execute();
  EXPECT_DOUBLE_EQ(out[1].slice(2, 3, 4).to_double_vector()[0], 1.0);
  EXPECT_NE(out[1].storage(), cache.storage());
  for (double v : cache.to_double_vector()) ASSERT_EQ(v, 0.0);
}

TEST(Engine, ElementwiseStateUpdateInPlace) {
  // new_state = add(state, x); output (sum(new_state), new_state) ; new_state -> state
  Graph g;
  Node* st = g.add_node(NodeOp::kPlaceholder, "state", {}, {}, "state");
  Node* x = g.add_node(NodeOp::kPlaceholder, "x", {}, {}, "x");
  Node* a = g.add_node(NodeOp::kCallFunction, "aten.add.Tensor", {N(st), N(x)});
  Node* m = g.add_node(NodeOp::kCallFunction, "aten.mul.Tensor", {N(a), F(2.0)});
  Node* s = g.add_node(NodeOp::kCallFunction, "aten.sum.default", {N(m)});
  g.add_node(NodeOp::kOutput, "output", {Tup({N(s), N(m)})});
  Tensor state = ft({1, 2, 3, 4}, {2, 2});
  Tensor xv = ft({1, 1, 1, 1}, {2, 2});
  auto engine = build(g, {{1, 0}}, {state, xv});
  ExecutionContext ctx(engine);
  ctx.bind_input(0, state);
  ctx.bind_input(1, xv);
  auto out = ctx.execute();
  EXPECT_TRUE(tensor_near(state, {2, 2}, {4, 6, 8, 10}));
  EXPECT_EQ(out[1].storage(), state.storage());
  EXPECT_DOUBLE_EQ(out[0].item().to_double(), 28.0);
}

TEST(Engine, WrongShapeOrDtypeOrLayoutOnAliasedBindingIsAnError) {
  auto g = slice_write_graph(false);
  Tensor cache = Tensor::zeros({2, 4, 16, 8}, DType::kFloat32);
  Tensor k = Tensor::full({2, 4, 1, 8}, Scalar(1.0), DType::kFloat32);
  auto engine = build(*g, {{1, 0}}, {cache, k});
  ExecutionContext ctx(engine);
  try {
    ctx.bind_input(0, Tensor::zeros({2, 4, 8, 8}, DType::kFloat32));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'cache'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2,4,16,8]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2,4,8,8]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ctx.bind_input(0, Tensor::zeros({2, 4, 16, 8}, DType::kFloat64)), Error);
  Tensor wide = Tensor::zeros({2, 4, 16, 16}, DType::kFloat32).slice(3, 0, 8);
  EXPECT_THROW(ctx.bind_input(0, wide), Error);
}

TEST(Engine, KvCacheUpdateOutOfRangeLeavesCacheIntact) {
  Graph g;
  Node* cache = g.add_node(NodeOp::kPlaceholder, "cache", {}, {}, "cache");
  Node* k = g.add_node(NodeOp::kPlaceholder, "k", {}, {}, "k");
  Node* pos = g.add_node(NodeOp::kPlaceholder, "pos", {}, {}, "pos");
  Node* u = g.add_node(NodeOp::kCallFunction, "inplace.kv_cache_update", {N(cache), N(k), N(pos)});
  g.add_node(NodeOp::kOutput, "output", {Tup({N(u)})});
  Tensor c = Tensor::full({1, 2, 4, 3}, Scalar(7.0), DType::kFloat32);
  Tensor kk = Tensor::full({1, 2, 2, 3}, Scalar(1.0), DType::kFloat32);
  Tensor p = lt({3}, {1});
  auto engine = Engine::build(g, {{0, 0}}, 0, {c, kk, lt({0}, {1})});
  ASSERT_EQ(engine->aliased_io().size(), 1u);
  EXPECT_EQ(engine->aliased_io()[0].kind, MutationKind::kKvCacheUpdate);
  ExecutionContext ctx(engine);
  ctx.bind_input(0, c);
  ctx.bind_input(1, kk);
  ctx.bind_input(2, p);  // 3 + 1 = 4 >= s_max 4
  try {
    ctx.execute();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'cache'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  for (double v : c.to_double_vector()) ASSERT_EQ(v, 7.0);
  p.data<int64_t>()[0] = 2;
  auto out = ctx.execute();
  EXPECT_EQ(out[0].storage(), c.storage());
  EXPECT_DOUBLE_EQ(c.select(2, 2).to_double_vector()[0], 1.0);
  EXPECT_DOUBLE_EQ(c.select(2, 3).to_double_vector()[0], 1.0);
  EXPECT_DOUBLE_EQ(c.select(2, 1).to_double_vector()[0], 7.0);
}

}  // namespace
