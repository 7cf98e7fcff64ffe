// Compile once, run on every value: each engine is built from one example and then called on
// fresh draws of every input — positions across their whole range and past it, negatives where
// PyTorch accepts them — and compared with the eager interpreter on each call (aliased,
// copy-back and a saved-and-loaded engine file). Where eager raises, the engine must refuse
// before writing anything.
#include "compiler/differential.h"
#include "engine/execution_context.h"
#include "ir/builder.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

Tensor randn(Shape s, uint32_t seed) {
  return seeded_uniform(std::move(s), seed);
}

Tensor scalar(int64_t v) {
  return Tensor::scalar(v, DType::kInt64);
}
Tensor vec1(int64_t v) {
  return Tensor::from_vector<int64_t>({v}, {1});
}

// cache[:, :, pos:pos+1] = k; return cache[:, :, :pos+1].sum()
std::unique_ptr<Graph> sum_over_prefix() {
  GraphBuilder b("sum_prefix");
  Node* cache = b.placeholder("cache");
  Node* k = b.placeholder("k");
  Node* pos = b.placeholder("pos");
  Node* end = b.call_function("_operator.add", {pos, 1});
  b.call_function("_operator.setitem",
                  {cache, arg::tuple({arg::slice(), arg::slice(), arg::slice(pos, end)}), k});
  Node* prefix =
      b.call_function("_operator.getitem",
                      {cache, arg::tuple({arg::slice(), arg::slice(), arg::slice(nullptr, end)})});
  b.output(arg::tuple({b.call_method("sum", {prefix})}));
  return b.build();
}

TEST(RuntimeValues, SumOverThePrefixFollowsThePositionOnEveryCall) {
  auto g = sum_over_prefix();
  std::vector<std::vector<Tensor>> draws;
  uint32_t seed = 1;
  for (int64_t pos : {0, 1, 2, 3, 4, 5, 6, 7, -1, -2, -8, 8, 9, 100, -9, -100})
    draws.push_back({randn({1, 2, 8, 4}, seed++), randn({1, 2, 1, 4}, seed++), scalar(pos)});
  int accepted = expect_engine_exact_on_draws(
      *g, {randn({1, 2, 8, 4}, 99), randn({1, 2, 1, 4}, 98), scalar(3)}, draws);
  EXPECT_EQ(accepted, 16);  // PyTorch accepts every one: a slice past the end is empty
}

TEST(RuntimeValues, ExampleOutsideTheCacheDoesNotFreezeAZeroRowWrite) {
  auto g = sum_over_prefix();
  std::vector<std::vector<Tensor>> draws;
  for (int64_t pos : {0, 3, 7})
    draws.push_back({randn({1, 2, 8, 4}, 5), randn({1, 2, 1, 4}, 6), scalar(pos)});
  expect_engine_exact_on_draws(*g, {randn({1, 2, 8, 4}, 1), randn({1, 2, 1, 4}, 2), scalar(8)},
                               draws);
}

// kc.index_copy_(2, pos, k); vc.index_copy_(2, pos, v); attention over kc[:, :, :pos[0]+1]
std::unique_ptr<Graph> prefix_attention() {
  GraphBuilder b("prefix_attention");
  Node* q = b.placeholder("q");
  Node* k = b.placeholder("k");
  Node* v = b.placeholder("v");
  Node* kc = b.placeholder("kc");
  Node* vc = b.placeholder("vc");
  Node* pos = b.placeholder("pos");
  b.call_method("index_copy_", {kc, 2, pos, k});
  b.call_method("index_copy_", {vc, 2, pos, v});
  Node* p0 = b.call_function("_operator.getitem", {pos, 0});
  Node* end = b.call_function("_operator.add", {p0, 1});
  auto prefix = [&](Node* c) {
    return b.call_function("_operator.getitem",
                           {c, arg::tuple({arg::slice(), arg::slice(), arg::slice(nullptr, end)})});
  };
  Node* ks = prefix(kc);
  Node* vs = prefix(vc);
  Node* scores = b.call_function("_operator.matmul", {q, b.call_method("transpose", {ks, -2, -1})});
  Node* w = b.call_function("torch.softmax", {scores, -1});
  b.output(arg::tuple({b.call_function("_operator.matmul", {w, vs})}));
  return b.build();
}

TEST(RuntimeValues, DecodeLoopOverSixteenPositionsWithOneEngine) {
  auto g = prefix_attention();
  const Shape cache{1, 2, 16, 4}, row{1, 2, 1, 4};
  std::vector<std::vector<Tensor>> draws;
  uint32_t seed = 10;
  for (int64_t pos = 0; pos < 16; ++pos)
    draws.push_back({randn(row, seed++), randn(row, seed++), randn(row, seed++),
                     randn(cache, seed++), randn(cache, seed++), vec1(pos)});
  for (int64_t bad : {16, 40})  // index_copy_ refuses an index past the end, as PyTorch does
    draws.push_back(
        {randn(row, 1), randn(row, 2), randn(row, 3), randn(cache, 4), randn(cache, 5), vec1(bad)});
  int accepted = expect_engine_exact_on_draws(
      *g, {randn(row, 1), randn(row, 2), randn(row, 3), randn(cache, 4), randn(cache, 5), vec1(3)},
      draws, 1e-6);
  EXPECT_EQ(accepted, 16);
}

// `pos[0] + 1` is a tensor whose value only defines the prefix's runtime end, which the
// engine's scalars compute from the input: the add is not a step (dead_steps), so a decode
// call does not launch a kernel for it, and the engine still follows the position.
TEST(RuntimeValues, ATensorThatOnlyDefinesARuntimeValueIsNotAStep) {
  auto g = prefix_attention();
  const Shape cache{1, 2, 16, 4}, row{1, 2, 1, 4};
  const std::vector<Tensor> example{randn(row, 1),   randn(row, 2),   randn(row, 3),
                                    randn(cache, 4), randn(cache, 5), vec1(3)};
  CompiledProgram cp = compile(*g, example);
  for (const Step& s : cp.engine->plan().steps)
    EXPECT_FALSE(s.op && s.op->schema.name == "add") << s.node;
  std::vector<std::vector<Tensor>> draws;
  for (int64_t pos : {0, 15, 7})
    draws.push_back({randn(row, 6), randn(row, 7), randn(row, 8), randn(cache, 9), randn(cache, 10),
                     vec1(pos)});
  EXPECT_EQ(expect_engine_exact_on_draws(*g, example, draws, 1e-6), 3);
}

TEST(RuntimeValues, ABadPositionForTheSecondCacheRefusesBeforeTheFirstIsWritten) {
  // Two caches at two positions: a bad v position is refused before the k cache is written
  // (every check that depends only on the call's inputs runs before the first write).
  GraphBuilder b("two_caches");
  Node* kc = b.placeholder("kc");
  Node* vc = b.placeholder("vc");
  Node* k = b.placeholder("k");
  Node* pk = b.placeholder("pk");
  Node* pv = b.placeholder("pv");
  b.call_method("index_copy_", {kc, 2, pk, k});
  b.call_method("index_copy_", {vc, 2, pv, k});
  b.output(arg::tuple({b.call_method("sum", {k})}));
  auto g = b.build();
  const Shape cache{1, 2, 8, 4}, row{1, 2, 1, 4};
  std::vector<std::vector<Tensor>> draws;
  for (auto [p, q] : std::vector<std::pair<int64_t, int64_t>>{{1, 2}, {7, 0}, {3, 8}, {9, 1}})
    draws.push_back({randn(cache, 3), randn(cache, 4), randn(row, 5), vec1(p), vec1(q)});
  EXPECT_EQ(expect_engine_exact_on_draws(
                *g, {randn(cache, 1), randn(cache, 2), randn(row, 3), vec1(0), vec1(1)}, draws),
            2);
}

TEST(RuntimeValues, ConsecutiveCallsOnTheCallersCachesDecode) {
  // One context, the caller's caches, positions 0..15: the engine's final caches and every
  // output match eager run the same way.
  auto g = prefix_attention();
  const Shape cache{1, 2, 16, 4}, row{1, 2, 1, 4};
  CompiledProgram cp = compile(
      *g, {randn(row, 1), randn(row, 2), randn(row, 3), Tensor::zeros(cache, DType::kFloat32),
           Tensor::zeros(cache, DType::kFloat32), vec1(0)});
  Tensor kc = Tensor::zeros(cache, DType::kFloat32), vc = Tensor::zeros(cache, DType::kFloat32);
  Tensor ekc = kc.clone(), evc = vc.clone();
  ExecutionContext ctx(cp.engine);
  for (int64_t pos = 0; pos < 16; ++pos) {
    Tensor q = randn(row, 100 + pos), k = randn(row, 200 + pos), v = randn(row, 300 + pos);
    Tensor p = vec1(pos);
    std::vector<Tensor> in{q, k, v, kc, vc, p};
    for (int i = 0; i < 6; ++i) ctx.bind_input(i, in[i]);
    std::vector<Tensor> out = ctx.execute();
    std::map<std::string, Value> ein{{"q", T(q)},    {"k", T(k)},    {"v", T(v)},
                                     {"kc", T(ekc)}, {"vc", T(evc)}, {"pos", T(p)}};
    State state;
    RunOutput ref = run_eager(*g, ein, &state);
    EXPECT_TRUE(tensor_equal(out[0], ref.flat[0].tensor, 1e-6)) << "pos " << pos;
    EXPECT_EQ(out[0].shape(), (Shape{1, 2, 1, 4}));
  }
  EXPECT_TRUE(tensor_equal(kc, ekc));
  EXPECT_TRUE(tensor_equal(vc, evc));
}

TEST(RuntimeValues, RingBufferAtTModN) {
  GraphBuilder b("ring");
  Node* buf = b.placeholder("buf");
  Node* x = b.placeholder("x");
  Node* t = b.placeholder("t");
  Node* slot = b.call_function("_operator.mod", {t, 4});
  b.call_function("_operator.setitem", {buf, arg::tuple({arg::slice(), slot}), x});
  b.output(arg::tuple({b.call_method("sum", {buf, 1})}));
  auto g = b.build();
  std::vector<std::vector<Tensor>> draws;
  for (int64_t step : {0, 1, 2, 3, 4, 5, 11, 1000003, -1, -6})
    draws.push_back({randn({3, 4}, 7 + step % 13), randn({3}, 3 + step % 7), scalar(step)});
  EXPECT_EQ(
      expect_engine_exact_on_draws(*g, {randn({3, 4}, 1), randn({3}, 2), scalar(5)}, draws, 1e-6),
      10);
}

TEST(RuntimeValues, IntegerIndexSliceNarrowSplitAndTranspose) {
  GraphBuilder b("reads");
  Node* x = b.placeholder("x");
  Node* n = b.placeholder("n");
  Node* row = b.call_function("_operator.getitem", {x, n});
  Node* cols =
      b.call_function("_operator.getitem", {x, arg::tuple({arg::slice(), arg::slice(nullptr, n)})});
  Node* nar = b.call_method("narrow", {x, 1, n, 1});
  Node* sel = b.call_method("select", {x, 0, n});
  Node* tr = b.call_method("transpose", {b.call_method("unsqueeze", {x, 0}), 0, n});
  b.output(arg::tuple({b.call_method("mul", {row, 2.0}), b.call_method("sum", {cols, 1}),
                       b.call_method("add", {nar, 1.0}), b.call_method("neg", {sel}),
                       b.call_method("sum", {tr, 0})}));
  auto g = b.build();
  std::vector<std::vector<Tensor>> draws;
  for (int64_t v : {0, 1, 2, 5, -1, -6, 6, 7, -7})
    draws.push_back({randn({6, 6}, 40 + static_cast<uint32_t>(v + 10)), scalar(v)});
  // transpose(0, n) only accepts n in [-3, 2]: the others must be refused like eager.
  int accepted = expect_engine_exact_on_draws(*g, {randn({6, 6}, 1), scalar(2)}, draws);
  EXPECT_GT(accepted, 2);
}

TEST(RuntimeValues, WriteThroughNarrowAtAPosition) {
  // cache.narrow(2, pos, 1).copy_(k): eager wraps a negative start once and refuses a start
  // past the end; the engine must do both, the refusal before any write.
  GraphBuilder b("narrow_write");
  Node* cache = b.placeholder("cache");
  Node* k = b.placeholder("k");
  Node* pos = b.placeholder("pos");
  b.call_method("copy_", {b.call_method("narrow", {cache, 2, pos, 1}), k});
  b.output(arg::tuple({b.call_method("mul", {cache, 2.0})}));
  auto g = b.build();
  std::vector<std::vector<Tensor>> draws;
  for (int64_t p : {0, 3, 7, -1, -8, 8, 9, -9})
    draws.push_back({randn({1, 2, 8, 4}, 90 + static_cast<uint32_t>(p + 9)),
                     randn({1, 2, 1, 4}, 20), scalar(p)});
  EXPECT_EQ(expect_engine_exact_on_draws(
                *g, {randn({1, 2, 8, 4}, 1), randn({1, 2, 1, 4}, 2), scalar(3)}, draws),
            5);
}

TEST(RuntimeValues, SplitAtARuntimeSize) {
  GraphBuilder b("split");
  Node* x = b.placeholder("x");
  Node* n = b.placeholder("n");
  Node* pieces = b.call_method("split", {x, n});
  Node* second = b.call_function("_operator.getitem", {pieces, 1});
  b.output(arg::tuple({b.call_method("mul", {second, 3.0})}));
  auto g = b.build();
  std::vector<std::vector<Tensor>> draws;
  for (int64_t v : {1, 2, 3, 4, 5, 6, 7})  // from 6 on there is no second piece: eager raises
    draws.push_back({randn({6, 3}, 60 + static_cast<uint32_t>(v)), scalar(v)});
  EXPECT_EQ(expect_engine_exact_on_draws(*g, {randn({6, 3}, 1), scalar(2)}, draws), 5);
}

TEST(RuntimeValues, ArangeAndTopkSizedByAnInput) {
  GraphBuilder b("sized");
  Node* x = b.placeholder("x");
  Node* n = b.placeholder("n");
  Node* r = b.call_function("torch.arange", {n});
  Node* top = b.call_function("torch.topk", {x, n});
  Node* values = b.call_function("_operator.getitem", {top, 0});
  b.output(arg::tuple({b.call_method("mul", {r, 2}), values}));
  auto g = b.build();
  CompileOptions options;
  options.value_ranges.push_back({"n", 0, 10});
  std::vector<std::vector<Tensor>> draws;
  for (int64_t v : {0, 1, 4, 9, 10})
    draws.push_back({randn({10}, 70 + static_cast<uint32_t>(v)), scalar(v)});
  EXPECT_EQ(expect_engine_exact_on_draws(*g, {randn({10}, 1), scalar(3)}, draws, 0, options), 5);
  // Outside the declared range: refused before anything runs, naming the input and the value.
  CompiledProgram cp = compile(*g, {randn({10}, 1), scalar(3)}, options);
  ExecutionContext ctx(cp.engine);
  Tensor xx = randn({10}, 1), nn = scalar(11);
  ctx.bind_input(0, xx);
  ctx.bind_input(1, nn);
  EXPECT_TRUE(mentions(error_of([&] { ctx.execute(); }), {"'n'", "11", "[0, 10]"}));
}

TEST(RuntimeValues, ArangeWithoutABoundIsRefusedAtCompileTime) {
  GraphBuilder b("unbounded");
  Node* n = b.placeholder("n");
  b.output(arg::tuple({b.call_function("torch.arange", {n})}));
  auto g = b.build();
  std::string msg = error_of([&] { compile(*g, {scalar(3)}); });
  EXPECT_TRUE(mentions(msg, {"[compile] node 'arange'", "no upper bound", "--value-range"})) << msg;
}

TEST(RuntimeValues, DataDependentSizesAreRefusedNamingTheNode) {
  {
    GraphBuilder b("nonzero");
    Node* x = b.placeholder("x");
    b.output(arg::tuple({b.call_function("torch.nonzero", {x})}));
    auto g = b.build();
    std::string msg = error_of([&] { compile(*g, {randn({4}, 1)}); });
    EXPECT_TRUE(mentions(msg, {"node 'nonzero'", "data-dependent shape"})) << msg;
  }
  {
    // A mask's sum used as a size: the value is computed from data, not read from an input.
    GraphBuilder b("mask_sum");
    Node* x = b.placeholder("x");
    Node* count =
        b.call_method("item", {b.call_method("sum", {b.call_function("_operator.gt", {x, 0.0})})});
    b.output(arg::tuple({b.call_function("torch.zeros", {count})}));
    auto g = b.build();
    std::string msg = error_of([&] { compile(*g, {randn({4}, 1)}); });
    EXPECT_TRUE(mentions(msg, {"[compile] node", "computes from data"})) << msg;
  }
}

TEST(RuntimeValues, PromptOfAnyLengthThroughOneDynamicDim) {
  GraphBuilder b("prefill");
  Node* x = b.placeholder("x");
  Node* w = b.get_attr("w", randn({4, 3}, 9));
  Node* h = b.call_function("_operator.matmul", {x, w});
  Node* s = b.call_function("torch.softmax", {h, -1});
  b.output(arg::tuple({s, b.call_method("sum", {h, 0}), b.call_method("size", {x, 0})}));
  auto g = b.build();
  CompileOptions options;
  options.dynamic_dims.push_back({"x", 0, 8});
  std::vector<std::vector<Tensor>> draws;
  for (int64_t len = 1; len <= 8; ++len)
    draws.push_back({randn({len, 4}, 80 + static_cast<uint32_t>(len))});
  EXPECT_EQ(expect_engine_exact_on_draws(*g, {randn({5, 4}, 1)}, draws, 1e-6, options), 8);
  CompiledProgram cp = compile(*g, {randn({5, 4}, 1)}, options);
  ExecutionContext ctx(cp.engine);
  EXPECT_TRUE(mentions(error_of([&] { ctx.bind_input(0, randn({9, 4}, 1)); }), {"'x'", "[9,4]"}));
}

TEST(RuntimeValues, CompilingRunsNoKernelAndCopiesNoWeight) {
  // Weights declared by metadata only: there is no data a kernel could read at compile time.
  GraphBuilder b("meta_weights");
  Node* x = b.placeholder("x");
  Node* w = b.get_attr("w", Tensor::meta({4, 4}, DType::kFloat32));
  b.output(
      arg::tuple({b.call_function("torch.relu", {b.call_function("_operator.matmul", {x, w})})}));
  auto g = b.build();
  CompiledProgram cp = compile(*g, {Tensor::meta({2, 4}, DType::kFloat32)});
  EXPECT_EQ(cp.engine->plan().steps.size(), 2u) << cp.engine->describe();
  // A real weight is shared with the graph, not copied.
  GraphBuilder b2("shared_weights");
  Node* x2 = b2.placeholder("x");
  Node* w2 = b2.get_attr("w", randn({4, 4}, 3));
  b2.output(arg::tuple({b2.call_function("_operator.matmul", {x2, w2})}));
  auto g2 = b2.build();
  CompiledProgram cp2 = compile(*g2, {Tensor::meta({2, 4}, DType::kFloat32)});
  ASSERT_EQ(cp2.engine->plan().constants.size(), 1u);
  EXPECT_EQ(cp2.engine->plan().constants[0].data_ptr(), g2->constants.at("w").data_ptr());
}

}  // namespace
