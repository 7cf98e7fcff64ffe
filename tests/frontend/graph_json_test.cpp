// Graph JSON v1: write -> read gives the identical graph at torch level and aten level, the
// hand-written fixtures read as FX and torch.export would have written them, and the graphs
// run in the eager interpreter with the values worked out by hand.
#include "frontend/graph_json.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "frontend/graph_equal.h"
#include "frontend/safetensors.h"
#include "interpreter/interpreter.h"
#include "ir/builder.h"
#include "test_util.h"

namespace inplace {
namespace {

using namespace inplace::testing;

const std::string kFixtures = std::string(INPLACE_SOURCE_DIR) + "/tests/frontend/fixtures";

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("inplace_graph_json_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A torch-level graph holding every kind of value graph JSON can carry.
std::unique_ptr<Graph> every_value_graph() {
  GraphBuilder b("every_value");
  Node* x = b.placeholder("x");
  Node* n = b.placeholder("n", 3);
  Node* cache = b.get_attr("layers.0.cache", iota({2, 3}));
  Node* add = b.call_method("add_", {x, 1.0});
  b.set_meta(add, {2, 3}, DType::kFloat32);
  add->meta.attrs["root_input"] = "x";
  Node* set = b.call_function(
      "_operator.setitem",
      {cache, arg::tuple({arg::slice(), arg::slice(0, n, 2), arg::ellipsis(), nullptr}), add});
  Node* full = b.call_function("torch.full", {arg::tuple({2, 3}), -INFINITY},
                               {{"dtype", DType::kBFloat16}, {"device", arg::device("cpu")}});
  Tensor f16 =
      Tensor::from_vector<float>({0.1f, -2.5f, 65504.0f, 1e-7f}, {2, 2}).to(DType::kFloat16);
  Node* misc =
      b.call_function("my_ns.my_op",
                      {NAN, -0.0, 1e-300, 1.0, 0.1, std::numeric_limits<int64_t>::max(),
                       std::numeric_limits<int64_t>::min(), true, false, "text \"quoted\" \\ \n",
                       "ünïcødé", arg::list({x, arg::list({1, 2}), arg::tuple({})}),
                       arg::dict({{"b", 1}, {"a", x}}), iota({3, 2}).t(), f16, lt({-1, 0, 7}, {3}),
                       bt({true, false}, {2}), Tensor::empty({0, 4}, DType::kInt8)},
                      {{"z", INFINITY}, {"a", arg::ints({4, 5})}}, "custom_name");
  b.outputs({add, set, full, misc});
  return b.build();
}

TEST(GraphJson, RoundTripTorchLevelEveryValue) {
  auto g = every_value_graph();
  std::string text = write_graph_json(*g);
  auto back = read_graph_json_string(text);
  EXPECT_TRUE(graphs_identical(*g, *back));
  // Writing again gives the same text: nothing drifts on a second trip.
  EXPECT_EQ(write_graph_json(*back), text);
  // Spot checks that the comparison really sees the values.
  Node* misc = back->find("custom_name");
  ASSERT_NE(misc, nullptr);
  EXPECT_TRUE(std::isnan(misc->args[0].f));
  EXPECT_TRUE(std::signbit(misc->args[1].f));
  EXPECT_EQ(misc->args[5].i, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(misc->args[6].i, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(misc->args[9].s, "text \"quoted\" \\ \n");
  EXPECT_EQ(misc->args[12].keys, (std::vector<std::string>{"b", "a"}));  // order kept
  EXPECT_EQ(misc->kwargs[0].first, "z");
  EXPECT_TRUE(tensor_near(misc->args[13].tensor, {2, 3}, {0, 2, 4, 1, 3, 5}));
  EXPECT_EQ(back->find("n")->args[0].i, 3);
  EXPECT_EQ(back->find("layers_0_cache")->target, "layers.0.cache");
}

TEST(GraphJson, FloatsStayFloatsAndIntsStayInts) {
  GraphBuilder b("numbers");
  Node* x = b.placeholder("x");
  Node* y = b.call_function("torch.mul", {x, 1.0}, {{"k", 2}, {"big", 1e300}, {"tiny", 5e-324}});
  b.output(y);
  auto g = b.build();
  std::string text = write_graph_json(*g);
  EXPECT_NE(text.find("[{\"node\":\"x\"},1.0]"), std::string::npos) << text;
  EXPECT_NE(text.find("\"k\":2,"), std::string::npos) << text;
  auto back = read_graph_json_string(text);
  const Node* mul = back->find("mul");
  EXPECT_EQ(mul->args[1].kind, Value::Kind::kFloat);
  EXPECT_EQ(mul->args[1].f, 1.0);
  EXPECT_EQ(mul->kwargs[0].second.kind, Value::Kind::kInt);
  EXPECT_EQ(mul->kwargs[1].second.f, 1e300);
  EXPECT_EQ(mul->kwargs[2].second.f, 5e-324);
}

TEST(GraphJson, NonFiniteValuesUseFloatObjects) {
  GraphBuilder b("nonfinite");
  Node* x = b.placeholder("x");
  Tensor t = ft({INFINITY, -INFINITY, NAN, 1.5f}, {4});
  b.output(b.call_function("torch.clamp", {x, -INFINITY, NAN, t}));
  std::string text = write_graph_json(*b.build());
  EXPECT_NE(text.find("{\"float\":\"-inf\"},{\"float\":\"nan\"}"), std::string::npos) << text;
  EXPECT_NE(
      text.find("\"data\":[{\"float\":\"inf\"},{\"float\":\"-inf\"},{\"float\":\"nan\"},1.5]"),
      std::string::npos)
      << text;
  auto back = read_graph_json_string(text);
  const Tensor& r = back->find("clamp")->args[3].tensor;
  EXPECT_TRUE(std::isinf(r.at(0)) && r.at(0) > 0);
  EXPECT_TRUE(std::isinf(r.at(1)) && r.at(1) < 0);
  EXPECT_TRUE(std::isnan(r.at(2)));
  EXPECT_EQ(r.at(3), 1.5);
}

TEST(GraphJson, EveryDTypeConstantRoundTripsExactly) {
  GraphBuilder b("dtypes");
  std::vector<double> values = {0.0, 1.0, -2.0, 127.0, 0.333333333333, -1e-3};
  for (int i = 0; i < kNumDTypes; ++i) {
    DType t = static_cast<DType>(i);
    Tensor src = dt(values, {2, 3}).to(t);
    if (t == DType::kBool) src = bt({true, false, true, true, false, false}, {2, 3});
    // Transposed: the writer must emit the logical (row-major) order.
    b.get_attr(std::string("c_") + dtype_name(t), src.t());
  }
  b.get_attr("empty", Tensor::empty({3, 0}, DType::kFloat64));
  b.get_attr("scalar", Tensor::scalar(Scalar(int64_t{1} << 60), DType::kInt64));
  b.output(nullptr);
  auto g = b.build();
  auto back = read_graph_json_string(write_graph_json(*g));
  EXPECT_TRUE(graphs_identical(*g, *back));
  EXPECT_EQ(back->constants.at("c_float32").shape(), (Shape{3, 2}));
  EXPECT_TRUE(
      tensor_near(back->constants.at("c_int8").contiguous(), {3, 2}, {0, 127, 1, 0, -2, 0}));
  EXPECT_EQ(back->constants.at("scalar").item().to_int(), int64_t{1} << 60);
}

TEST(GraphJson, ConstantsFileOptionWritesSafetensors) {
  auto dir = fresh_dir("constants_file");
  auto g = every_value_graph();
  write_graph_json_file(*g, (dir / "g.json").string(), {"weights.safetensors"});
  ASSERT_TRUE(std::filesystem::exists(dir / "weights.safetensors"));
  auto stored = read_safetensors((dir / "weights.safetensors").string());
  EXPECT_TRUE(tensor_equal(stored.at("layers.0.cache"), iota({2, 3})));
  auto back = read_graph_json((dir / "g.json").string());
  EXPECT_TRUE(graphs_identical(*g, *back));
  std::filesystem::remove_all(dir);
}

TEST(GraphJson, TorchLevelFixture) {
  auto g = read_graph_json(kFixtures + "/torch_level.json");
  EXPECT_EQ(g->name, "KVUpdate");
  EXPECT_EQ(g->size(), 12u);
  EXPECT_EQ(g->placeholders().size(), 3u);
  const Node* add = g->find("add_");
  EXPECT_EQ(add->op, NodeOp::kCallMethod);
  EXPECT_EQ(add->target, "add_");
  EXPECT_EQ(add->args[0].node, g->find("x"));
  EXPECT_EQ(add->args[1].kind, Value::Kind::kFloat);
  const Node* set = g->find("setitem");
  EXPECT_EQ(set->target, "_operator.setitem");
  const Value& index = set->args[1];
  ASSERT_EQ(index.kind, Value::Kind::kTuple);
  ASSERT_EQ(index.items.size(), 3u);
  EXPECT_EQ(index.items[0].kind, Value::Kind::kSlice);
  EXPECT_TRUE(index.items[0].items[0].is_none() && index.items[0].items[2].is_none());
  EXPECT_EQ(index.items[2].node, g->find("pos"));
  const Value& gi = g->find("getitem")->args[1];
  EXPECT_EQ(gi.items[0].kind, Value::Kind::kEllipsis);
  EXPECT_TRUE(gi.items[1].is_none());
  EXPECT_EQ(gi.items[2].items[0].i, 0);
  EXPECT_EQ(gi.items[2].items[1].i, 2);
  const Node* full = g->find("full");
  EXPECT_TRUE(std::isinf(full->args[1].f) && full->args[1].f < 0);
  EXPECT_EQ(full->kwarg("dtype")->dtype, DType::kFloat32);
  EXPECT_EQ(full->kwarg("device")->s, "cpu");
  EXPECT_EQ(g->find("add")->kwarg("alpha")->f, 0.5);
  EXPECT_EQ(*g->find("x")->meta.shape, (Shape{2, 3}));
  EXPECT_FALSE(g->find("pos")->meta.shape.has_value());
  EXPECT_TRUE(tensor_near(g->constants.at("cache"), {1, 2, 4, 3}, [] {
    std::vector<double> v;
    for (int i = 0; i < 24; ++i) v.push_back(i);
    return v;
  }()));
  EXPECT_TRUE(g->signature.empty());
  auto back = read_graph_json_string(write_graph_json(*g));
  EXPECT_TRUE(graphs_identical(*g, *back));
}

TEST(GraphJson, AtenLevelFixture) {
  auto g = read_graph_json(kFixtures + "/aten_level.json");
  EXPECT_EQ(g->find("slice_1")->target, "aten.slice.Tensor");
  EXPECT_EQ(g->find("slice_1")->args[3].i, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(g->find("copy_")->target, "aten.copy_.default");
  const Node* put = g->find("index_put_");
  EXPECT_EQ(put->target, "torch.ops.aten.index_put_.default");
  ASSERT_EQ(put->args[1].kind, Value::Kind::kList);
  EXPECT_TRUE(put->args[1].items[0].is_none());
  EXPECT_EQ(put->args[1].items[2].node, g->find("idx"));
  EXPECT_EQ(put->args[3].kind, Value::Kind::kBool);
  ASSERT_EQ(g->signature.inputs.size(), 4u);
  EXPECT_EQ(g->signature.inputs[0].kind, "buffer");
  EXPECT_EQ(g->signature.inputs[0].node, "b_cache");
  EXPECT_EQ(g->signature.inputs[0].target, "cache");
  EXPECT_EQ(g->signature.inputs[1].target, "");
  ASSERT_EQ(g->signature.outputs.size(), 2u);
  EXPECT_EQ(g->signature.outputs[0].kind, "buffer_mutation");
  EXPECT_EQ(g->signature.outputs[0].target, "cache");
  EXPECT_EQ(g->signature.outputs[1].kind, "user_output");
  // From the external file written by Python's struct module.
  EXPECT_TRUE(tensor_near(g->constants.at("_tensor_constant0"), {3}, {0.5, -1.25, 3.0}));
  // Round trip, inline and through a constants file.
  auto back = read_graph_json_string(write_graph_json(*g));
  EXPECT_TRUE(graphs_identical(*g, *back));
  auto dir = fresh_dir("aten");
  write_graph_json_file(*g, (dir / "a.json").string(), {"c.safetensors"});
  EXPECT_TRUE(graphs_identical(*g, *read_graph_json((dir / "a.json").string())));
  std::filesystem::remove_all(dir);
}

TEST(GraphJson, TwoConstantsFromOneKeyDoNotShareStorage) {
  auto dir = fresh_dir("shared_key");
  write_safetensors((dir / "w.safetensors").string(), {{"w", ft({1, 2}, {2})}});
  std::ofstream(dir / "g.json") << R"({"format": "inplace.graph", "version": 1, "nodes": [
      {"name": "a", "op": "get_attr", "target": "a"}, {"name": "b", "op": "get_attr", "target": "b"},
      {"name": "output", "op": "output", "args": [{"tuple": [{"node": "a"}, {"node": "b"}]}]}],
    "constants": {"a": {"file": "w.safetensors", "key": "w"},
                  "b": {"dtype": "float32", "shape": [2], "file": "w.safetensors", "key": "w"}}})";
  auto g = read_graph_json((dir / "g.json").string());
  EXPECT_FALSE(g->constants.at("a").same_storage(g->constants.at("b")));
  EXPECT_TRUE(tensor_equal(g->constants.at("a"), g->constants.at("b")));
  std::filesystem::remove_all(dir);
}

// The fixtures' ops belong to other op families; these run once they are registered.
bool ops_registered(const Graph& g) {
  for (const Node* n : g.nodes())
    if (n->is_call() && Registry::get().canonical_name(n->target, nullptr).empty()) return false;
  return true;
}

TEST(GraphJson, TorchLevelFixtureRunsEagerly) {
  auto g = read_graph_json(kFixtures + "/torch_level.json");
  if (!ops_registered(*g)) GTEST_SKIP() << "ops of the fixture are not registered yet";
  Tensor x = iota({2, 3});
  Tensor k = ft({100, 101, 102, 103, 104, 105}, {1, 2, 3});
  State state = initial_state(*g);
  RunOutput r = run_eager(*g, {{"x", T(x)}, {"k", T(k)}, {"pos", I(1)}}, &state);
  // x.add_(1.0) shows in the caller's tensor.
  EXPECT_TRUE(tensor_near(x, {2, 3}, {1, 2, 3, 4, 5, 6}));
  ASSERT_EQ(r.flat.size(), 2u);
  // maximum(x + 1 + 0.5 * 2, -inf)
  EXPECT_TRUE(tensor_near(r.flat[0].tensor, {2, 3}, {2, 3, 4, 5, 6, 7}));
  // cache[:, :, 1] = k, then cache[..., None, 0:2]
  std::vector<double> cache(24);
  for (int i = 0; i < 24; ++i) cache[i] = i;
  for (int c = 0; c < 2; ++c)
    for (int j = 0; j < 3; ++j) cache[c * 12 + 1 * 3 + j] = 100 + c * 3 + j;
  EXPECT_TRUE(tensor_near(state.at("cache"), {1, 2, 4, 3}, cache));
  std::vector<double> want;
  for (int c = 0; c < 2; ++c)
    for (int p = 0; p < 4; ++p)
      for (int j = 0; j < 2; ++j) want.push_back(cache[c * 12 + p * 3 + j]);
  EXPECT_TRUE(tensor_near(r.flat[1].tensor, {1, 2, 4, 1, 2}, want));
  // The graph's own constant is the initial state, untouched.
  EXPECT_EQ(g->constants.at("cache").at(3), 3.0);
}

TEST(GraphJson, AtenLevelFixtureRunsEagerly) {
  auto g = read_graph_json(kFixtures + "/aten_level.json");
  if (!ops_registered(*g)) GTEST_SKIP() << "ops of the fixture are not registered yet";
  Tensor x = iota({2, 3});
  Tensor k = ft({100, 101, 102, 103, 104, 105}, {1, 2, 1, 3});
  State state = initial_state(*g);
  Tensor cache = state.at("cache");
  RunOutput r = run_eager(
      *g, {{"b_cache", T(cache)}, {"x", T(x)}, {"k", T(k)}, {"idx", T(lt({2}, {1}))}}, &state);
  ASSERT_EQ(r.flat.size(), 2u);
  EXPECT_TRUE(r.flat[0].tensor.same_view(cache));  // index_put_ returns the buffer itself
  EXPECT_TRUE(tensor_near(r.flat[1].tensor, {2, 3}, {1, -0.5, 10, 7, 5.5, 16}));
  std::vector<double> want(24, 0.0);
  for (int c = 0; c < 2; ++c)
    for (int j = 0; j < 3; ++j) {
      want[c * 12 + 0 * 3 + j] = 100 + c * 3 + j;  // copy_ into cache[:, :, 0:1]
      want[c * 12 + 2 * 3 + j] = 100 + c * 3 + j;  // index_put_ at cache[:, :, [2]]
    }
  EXPECT_TRUE(tensor_near(state.at("cache"), {1, 2, 4, 3}, want));
}

}  // namespace
}  // namespace inplace
