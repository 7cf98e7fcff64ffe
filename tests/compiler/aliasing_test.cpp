// The aliased-I/O behaviours Torch-TensorRT tests, rebuilt on inplace's engine, plus the
// general path TensorRT cannot do. Every case compares against the eager interpreter.
#include "compiler/differential.h"
#include "ir/builder.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

Tensor randn(Shape s, uint32_t seed) {
  return seeded_uniform(std::move(s), seed);
}

int count_kind(const Engine& e, MutationKind k) {
  int n = 0;
  for (const Mutation& a : e.aliased_io()) n += a.kind == k;
  return n;
}

// cache[:, :, start:stop:step] = k
std::unique_ptr<Graph> slice_write(Shape k_shape, Arg start, Arg stop, Arg step = nullptr,
                                   bool buffer = false) {
  GraphBuilder b("slice_write");
  Node* cache = buffer ? b.get_attr("layers.0.cache", Tensor::zeros({2, 4, 16, 8}, DType::kFloat32))
                       : b.placeholder("cache");
  Node* k = b.placeholder("k");
  b.call_function(
      "_operator.setitem",
      {cache, arg::tuple({arg::slice(), arg::slice(), arg::slice(start, stop, step)}), k});
  Node* y = b.call_method("mul", {k, 2.0});
  b.output(arg::tuple({y}));
  (void)k_shape;
  return b.build();
}

TEST(Aliasing, SingleSliceWriteIsOneKvCacheUpdateAlias) {
  auto g = slice_write({2, 4, 1, 8}, 3, 4);
  Tensor cache = Tensor::zeros({2, 4, 16, 8}, DType::kFloat32);
  Tensor k = randn({2, 4, 1, 8}, 1);
  CompiledRun r = expect_compiled_equals_eager(*g, {cache, k});
  const Engine& e = *r.compiled.engine;
  ASSERT_EQ(e.aliased_io().size(), 1u) << e.describe();
  EXPECT_EQ(e.aliased_io()[0].kind, MutationKind::kKvCacheUpdate);
  EXPECT_EQ(e.aliased_io()[0].input, 0);
  EXPECT_EQ(e.aliased_input(e.aliased_io()[0].output), 0);
  EXPECT_EQ(e.original_output_count(), 1);
}

TEST(Aliasing, PairedKAndVCaches) {
  GraphBuilder b("kv");
  Node* kc = b.placeholder("k_cache");
  Node* vc = b.placeholder("v_cache");
  Node* k = b.placeholder("k");
  Node* v = b.placeholder("v");
  Value idx = arg::tuple({arg::slice(), arg::slice(), arg::slice(5, 6)});
  b.call_function("_operator.setitem", {kc, idx, k});
  b.call_function("_operator.setitem", {vc, idx, v});
  Node* s = b.call_function("torch.matmul", {kc, b.call_method("transpose", {vc, -1, -2})});
  b.output(arg::tuple({s}));
  auto g = b.build();
  CompiledRun r = expect_compiled_equals_eager(*g,
                                               {randn({1, 2, 8, 4}, 2), randn({1, 2, 8, 4}, 3),
                                                randn({1, 2, 1, 4}, 4), randn({1, 2, 1, 4}, 5)},
                                               1e-5);
  EXPECT_EQ(count_kind(*r.compiled.engine, MutationKind::kKvCacheUpdate), 2)
      << r.compiled.engine->describe();
}

TEST(Aliasing, StreamingCallsWriteTheSameCache) {
  GraphBuilder b("stream");
  Node* cache_in = b.placeholder("cache");
  Node* k_in = b.placeholder("k");
  b.call_function("_operator.setitem",
                  {cache_in, arg::tuple({arg::slice(), arg::slice(), arg::slice(3, 4)}), k_in});
  b.output(arg::tuple({b.call_function("torch.sum", {cache_in})}));
  auto g = b.build();
  Tensor cache = Tensor::zeros({2, 4, 16, 8}, DType::kFloat32);
  Tensor k = Tensor::zeros({2, 4, 1, 8}, DType::kFloat32);
  CompiledProgram cp = compile(*g, {cache, k});
  ASSERT_EQ(count_kind(*cp.engine, MutationKind::kKvCacheUpdate), 1) << cp.engine->describe();
  ExecutionContext ctx(cp.engine);
  ctx.bind_input("cache", cache);
  ctx.bind_input("k", k);
  void* addr = cache.data_ptr();
  for (auto [value, sum] : {std::pair{1.0, 64.0}, {5.0, 320.0}, {0.0, 0.0}}) {
    k.fill(Scalar(value));
    auto out = ctx.execute();
    EXPECT_DOUBLE_EQ(out[0].item().to_double(), sum);
    double total = 0;
    for (double x : cache.to_double_vector()) total += x;
    EXPECT_DOUBLE_EQ(total, sum);
    EXPECT_EQ(out[1].data_ptr(), addr);
  }
}

TEST(Aliasing, BufferBackedCacheIsLiftedAndWrittenInPlace) {
  auto g = slice_write({2, 4, 1, 8}, 3, 4, nullptr, /*buffer=*/true);
  CompiledRun r = expect_compiled_equals_eager(*g, {randn({2, 4, 1, 8}, 6)});
  const Engine& e = *r.compiled.engine;
  ASSERT_EQ(r.compiled.lifted_buffers.size(), 1u);
  EXPECT_EQ(r.compiled.lifted_buffers[0].second, "layers.0.cache");
  EXPECT_EQ(count_kind(e, MutationKind::kKvCacheUpdate), 1) << e.describe();
}

TEST(Aliasing, ExportModuleFormCopyIntoBuffer) {
  // torch.export's module(): new = slice_scatter(buf, k, 2, 3, 4); aten.copy_(buf, new)
  GraphBuilder b("export_module");
  Node* buf = b.get_attr("cache", Tensor::zeros({1, 2, 8, 4}, DType::kFloat32));
  Node* k = b.placeholder("k");
  Node* upd = b.call_function("aten.slice_scatter.default", {buf, k, 2, 3, 4});
  Node* buf2 = b.get_attr("cache");
  b.call_function("aten.copy_.default", {buf2, upd});
  b.output(arg::tuple({b.call_function("aten.sum.default", {upd})}));
  auto g = b.build();
  CompiledRun r = expect_compiled_equals_eager(*g, {randn({1, 2, 1, 4}, 7)}, 1e-6);
  EXPECT_EQ(r.compiled.engine->aliased_io().size(), 1u) << r.compiled.engine->describe();
}

TEST(Aliasing, ReturningTheMutatedBufferToo) {
  GraphBuilder b("return_buffer");
  Node* buf = b.get_attr("state", Tensor::full({4, 3}, Scalar(1.0), DType::kFloat32));
  Node* x = b.placeholder("x");
  b.call_method("add_", {buf, x});
  b.output(arg::tuple({buf, b.call_method("sum", {buf})}));
  auto g = b.build();
  CompiledRun r = expect_compiled_equals_eager(*g, {randn({4, 3}, 8)}, 1e-6);
  // The returned buffer is the state's own tensor.
  EXPECT_EQ(r.outputs[0].storage(), r.state.at("state").storage());
}

TEST(Aliasing, StridedSliceWriteTakesTheGeneralPath) {
  auto g = slice_write({2, 4, 4, 8}, 0, 8, 2);
  CompiledRun r = expect_compiled_equals_eager(
      *g, {Tensor::zeros({2, 4, 16, 8}, DType::kFloat32), randn({2, 4, 4, 8}, 9)});
  EXPECT_EQ(count_kind(*r.compiled.engine, MutationKind::kKvCacheUpdate), 0);
  EXPECT_EQ(r.compiled.engine->aliased_io().size(), 1u);
}

TEST(Aliasing, FunctionalSliceScatterLeavesTheInputUntouched) {
  GraphBuilder b("functional");
  Node* cache_in = b.placeholder("cache");
  Node* k_in = b.placeholder("k");
  Node* s = b.call_function("torch.slice_scatter", {cache_in, k_in},
                            {{"dim", 2}, {"start", 3}, {"end", 4}});
  b.output(arg::tuple({s}));
  auto g = b.build();
  Tensor cache = randn({2, 4, 16, 8}, 10);
  CompiledRun r = expect_compiled_equals_eager(*g, {cache, randn({2, 4, 1, 8}, 11)});
  EXPECT_TRUE(r.compiled.engine->aliased_io().empty());
  EXPECT_TRUE(tensor_equal(r.inputs[0], cache));
}

TEST(Aliasing, NoMutationNoAliases) {
  GraphBuilder b("pure");
  Node* x = b.placeholder("x");
  b.output(arg::tuple({b.call_function("torch.relu", {b.call_method("mul", {x, 3.0})})}));
  auto g = b.build();
  CompiledRun r = expect_compiled_equals_eager(*g, {randn({3, 5}, 12)});
  EXPECT_TRUE(r.compiled.engine->aliased_io().empty());
}

// ---- the general path: any mutated input ends up in the caller's storage

TEST(Aliasing, ElementwiseStateUpdate) {
  GraphBuilder b("add_");
  Node* st = b.placeholder("state");
  Node* x = b.placeholder("x");
  b.call_method("add_", {st, x});
  b.call_method("mul_", {st, 0.5});
  b.output(arg::tuple({b.call_method("sum", {st})}));
  auto g = b.build();
  CompiledRun r = expect_compiled_equals_eager(*g, {randn({4, 8}, 13), randn({4, 8}, 14)}, 1e-6);
  ASSERT_EQ(r.compiled.engine->aliased_io().size(), 1u);
  for (const Step& s : r.compiled.engine->plan().steps) EXPECT_NE(s.kind, StepKind::kCopy);
}

// F.relu(x, inplace=True) writes x: normalize turns it into relu_, so the write is not lost.
TEST(Aliasing, FunctionalReluWithInplaceFlagWritesTheInput) {
  for (bool inplace : {true, false}) {
    GraphBuilder b("relu_inplace");
    Node* st = b.placeholder("state");
    Node* y = b.call_function("torch.nn.functional.relu", {st}, {{"inplace", inplace}});
    Node* z = b.call_function("torch.nn.functional.silu", {st}, {{"inplace", inplace}});
    b.output(arg::tuple({b.call_method("mul", {y, 2.0}), z}));
    auto g = b.build();
    CompiledRun r = expect_compiled_equals_eager(*g, {randn({4, 8}, 17)}, 1e-6);
    EXPECT_EQ(r.compiled.engine->aliased_io().size(), inplace ? 1u : 0u) << inplace;
  }
}

// Attribute reads as torch.fx records them (builtins.getattr): the (values, indices) fields of
// topk, x.shape / x.ndim / x.mT / x.T / x.dtype, next to an in-place state update.
TEST(Aliasing, GetattrFieldsAndTensorAttributes) {
  GraphBuilder b("getattr");
  Node* st = b.placeholder("state");
  Node* x = b.placeholder("x");
  Node* tk = b.call_function("torch.topk", {x, 2});
  Node* values = b.call_function("builtins.getattr", {tk, "values"});
  Node* indices = b.call_function("builtins.getattr", {tk, "indices"});
  Node* shape = b.call_function("builtins.getattr", {x, "shape"});
  Node* rows = b.call_function("_operator.getitem", {shape, 0});
  Node* ndim = b.call_function("builtins.getattr", {x, "ndim"});
  b.call_method("add_", {st, b.call_method("sum", {values})});
  b.call_method("mul_", {st, rows});
  Node* mt = b.call_function("builtins.getattr", {x, "mT"});
  Node* t = b.call_function("builtins.getattr", {x, "T"});
  Node* dt = b.call_function("builtins.getattr", {x, "dtype"});
  b.output(arg::tuple(
      {values, indices, b.call_method("mul", {mt, ndim}), b.call_method("to", {t, dt})}));
  auto g = b.build();
  CompiledRun r = expect_compiled_equals_eager(*g, {randn({2, 3}, 18), randn({4, 5}, 19)}, 1e-6);
  EXPECT_EQ(r.compiled.engine->aliased_io().size(), 1u);
  std::map<std::string, Value> in{{"state", Value::from_tensor(randn({2, 3}, 18))},
                                  {"x", Value::from_tensor(randn({4, 5}, 19))}};
  State state;
  GraphBuilder bad("bad_attr");
  Node* y = bad.placeholder("x");
  bad.output(arg::tuple({bad.call_function("builtins.getattr", {y, "grad_fn"})}));
  auto gb = bad.build();
  std::map<std::string, Value> in2{{"x", in.at("x")}};
  try {
    run_eager(*gb, in2, &state);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'grad_fn'"), std::string::npos) << e.what();
  }
}

TEST(Aliasing, RingBuffer3D) {
  GraphBuilder b("ring");
  Node* ring = b.placeholder("ring");
  Node* x = b.placeholder("x");
  Node* idx = b.placeholder("slot");
  b.call_method("index_copy_", {ring, 1, idx, x});
  b.output(arg::tuple({b.call_method("mean", {ring}, {{"dim", 1}})}));
  auto g = b.build();
  CompiledRun r = expect_compiled_equals_eager(
      *g, {randn({2, 6, 3}, 15), randn({2, 1, 3}, 16), lt({4}, {1})}, 1e-6);
  EXPECT_EQ(r.compiled.engine->aliased_io().size(), 1u);
}

TEST(Aliasing, FullOverwrite) {
  GraphBuilder b("overwrite");
  Node* st = b.placeholder("state");
  Node* x = b.placeholder("x");
  b.call_method("copy_", {st, b.call_function("torch.tanh", {x})});
  b.output(arg::tuple({b.call_method("sum", {x})}));
  auto g = b.build();
  CompiledRun r = expect_compiled_equals_eager(*g, {randn({5, 4}, 17), randn({5, 4}, 18)}, 1e-6);
  EXPECT_EQ(r.compiled.engine->aliased_io().size(), 1u);
}

TEST(Aliasing, IndexPutAccumulate) {
  GraphBuilder b("index_put");
  Node* st = b.placeholder("state");
  Node* idx = b.placeholder("idx");
  Node* v = b.placeholder("v");
  b.call_method("index_put_", {st, arg::list({idx}), v}, {{"accumulate", true}});
  b.output(arg::tuple({b.call_method("sum", {st})}));
  auto g = b.build();
  CompiledRun r = expect_compiled_equals_eager(
      *g, {randn({6, 3}, 19), lt({1, 4, 1}, {3}), randn({3, 3}, 20)}, 1e-6);
  EXPECT_EQ(r.compiled.engine->aliased_io().size(), 1u);
}

TEST(Aliasing, WriteThroughTransposeView) {
  GraphBuilder b("transpose_write");
  Node* st = b.placeholder("state");
  Node* x = b.placeholder("x");
  Node* v = b.call_method("transpose", {st, 0, 1});
  b.call_function("_operator.setitem", {v, 1, x});
  b.output(arg::tuple({b.call_method("sum", {v})}));
  auto g = b.build();
  CompiledRun r = expect_compiled_equals_eager(*g, {randn({3, 4}, 21), randn({3}, 22)}, 1e-6);
  EXPECT_EQ(r.compiled.engine->aliased_io().size(), 1u);
}

TEST(Aliasing, ReadOfOldValueAfterTheNewOneForcesATemporary) {
  // Functional program with a user-declared alias: new = state * 2 is the new state, but
  // state.sum() (the old value) is computed after it.
  GraphBuilder b("declared");
  Node* st = b.placeholder("state");
  Node* nw = b.call_method("mul", {st, 2.0});
  Node* old_sum = b.call_method("sum", {st});
  b.output(arg::tuple({nw, old_sum}));
  auto g = b.build();
  Tensor state = randn({4, 4}, 23);
  CompileOptions opts;
  opts.mutated_inputs = {{"state", 0}};
  CompiledRun r = run_compiled(*g, {state}, true, opts);
  ASSERT_EQ(r.compiled.engine->aliased_io().size(), 1u) << r.compiled.engine->describe();
  double want = 0;
  for (double v : state.to_double_vector()) want += v;
  EXPECT_NEAR(r.outputs[1].item().to_double(), want, 1e-5);
  EXPECT_TRUE(tensor_near(r.inputs[0], {4, 4}, [&] {
    std::vector<double> v = state.to_double_vector();
    for (double& x : v) x *= 2;
    return v;
  }()));
  EXPECT_EQ(r.outputs[0].storage(), r.inputs[0].storage());
}

TEST(Aliasing, WritePositionsFollowEagerOnEveryValue) {
  // cache[:, :, pos:pos+1] = k on one engine at every position: past the end the slice is
  // empty and PyTorch writes nothing; a negative position wraps once.
  GraphBuilder b("decode");
  Node* cache = b.placeholder("cache");
  Node* k = b.placeholder("k");
  Node* pos = b.placeholder("pos");
  Node* end = b.call_function("_operator.add", {pos, 1});
  b.call_function("_operator.setitem",
                  {cache, arg::tuple({arg::slice(), arg::slice(), arg::slice(pos, end)}), k});
  b.output(arg::tuple({b.call_method("sum", {k})}));
  auto g = b.build();
  Tensor c = randn({1, 2, 8, 4}, 24);
  Tensor kk = randn({1, 2, 1, 4}, 25);
  CompiledProgram cp = compile(*g, {c, kk, lt({0}, {1})});
  EXPECT_EQ(count_kind(*cp.engine, MutationKind::kKvCacheUpdate), 1) << cp.engine->describe();
  std::vector<std::vector<Tensor>> draws;
  for (int64_t p : {7, 8, 100, -1, -2, -8, -9, 0})
    draws.push_back({randn({1, 2, 8, 4}, 30), randn({1, 2, 1, 4}, 31), lt({p}, {1})});
  EXPECT_EQ(expect_engine_exact_on_draws(*g, {c, kk, lt({0}, {1})}, draws), 8);
}

TEST(Aliasing, WriteIndexOutOfRangeNamesTheBindingAndLeavesMemoryIntact) {
  // index_copy_ refuses an index past the end (PyTorch raises): refused before any write.
  GraphBuilder b("decode");
  Node* cache = b.placeholder("cache");
  Node* k = b.placeholder("k");
  Node* pos = b.placeholder("pos");
  b.call_method("index_copy_", {cache, 2, pos, k});
  b.output(arg::tuple({b.call_method("sum", {k})}));
  auto g = b.build();
  Tensor c = randn({1, 2, 8, 4}, 24);
  Tensor before = c.clone();
  Tensor kk = randn({1, 2, 1, 4}, 25);
  Tensor p = lt({0}, {1});
  CompiledProgram cp = compile(*g, {c, kk, p});
  EXPECT_EQ(count_kind(*cp.engine, MutationKind::kKvCacheUpdate), 1) << cp.engine->describe();
  ExecutionContext ctx(cp.engine);
  ctx.bind_input(0, c);
  ctx.bind_input(1, kk);
  ctx.bind_input(2, p);
  for (int64_t bad : {8, 100, -1}) {
    p.data<int64_t>()[0] = bad;
    try {
      ctx.execute();
      ADD_FAILURE() << "position " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'cache'"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(tensor_equal(c, before));
  }
  p.data<int64_t>()[0] = 7;
  ctx.execute();
  EXPECT_TRUE(tensor_equal(c.slice(2, 7, 8).contiguous(), kk));
}

}  // namespace
