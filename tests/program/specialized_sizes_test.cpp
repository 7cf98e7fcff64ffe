// A prefill method as torch.export (PyTorch 2.11) records it without dynamic shapes
// (fixtures/export_prefill_literal_sizes.json, the two-layer Decoder of
// python/tests/test_programs.py at 5 tokens): its views hold the example's 5 where the module
// took the length from x. Compiled once with x dim 1 and positions dim 0 dynamic up to 12, the
// program and the single engine must run every length 1..12 exactly as the eager interpreter
// runs the graph recorded at that length: every output and the final contents of every cache.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/compile.h"
#include "compiler/differential.h"
#include "engine/execution_context.h"
#include "frontend/graph_json.h"
#include "inplace/program.h"
#include "ir/builder.h"
#include "program/method_from_export.h"

namespace inplace::testing {
namespace {

const std::string kFixture =
    std::string(INPLACE_SOURCE_DIR) + "/tests/program/fixtures/export_prefill_literal_sizes.json";
constexpr int64_t kExample = 5, kBound = 12;
const std::vector<std::string> kCaches = {"layers.0.k_cache", "layers.0.v_cache",
                                          "layers.1.k_cache", "layers.1.v_cache"};

Tensor arange(int64_t n) {
  Tensor t = Tensor::zeros({n}, DType::kInt64);
  for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = i;
  return t;
}

// The module's state: seeded parameters, slots = arange(16), caches zero.
State module_state(const Graph& g) {
  State s;
  uint32_t seed = 40;
  for (const SignatureInput& in : g.signature.inputs) {
    if (in.kind == "user_input") continue;
    const Node* p = g.find(in.node);
    const Shape& shape = *p->meta.shape;
    if (in.target == "slots")
      s[in.target] = arange(shape[0]);
    else if (in.kind == "buffer")
      s[in.target] = Tensor::zeros(shape, DType::kFloat32);
    else
      s[in.target] = seeded_uniform(shape, seed++);
  }
  return s;
}

State copy_of(const State& s) {
  State c;
  for (const auto& [k, v] : s) c[k] = v.clone();
  return c;
}

// The graph as torch.export records it at `length` tokens: the length in every view's sizes.
std::unique_ptr<Graph> recorded_at(const Graph& g, int64_t length) {
  std::unique_ptr<Graph> r = g.clone();
  for (Node* n : r->nodes()) {
    if (n->target != "aten.view.default" && n->target != "aten.reshape.default") continue;
    std::vector<Value>& sizes = n->args[1].items;
    if (sizes.size() > 2 && sizes[0].i == 1 && sizes[1].i == kExample)
      sizes[1] = Value::integer(length);
  }
  return r;
}

struct Reference {
  std::vector<Tensor> outputs;
  State state;
};

Reference eager_at(const Graph& exported, const State& initial, const Tensor& x,
                   const Tensor& positions) {
  Reference r;
  r.state = copy_of(initial);
  std::unique_ptr<Graph> g = state_as_attributes(*recorded_at(exported, x.shape()[1]), r.state);
  RunOutput out = run_eager(
      *g, {{"x", Value::from_tensor(x.clone())}, {"positions", Value::from_tensor(positions)}},
      &r.state);
  for (const Value& v : out.flat) r.outputs.push_back(v.tensor);
  return r;
}

CompileOptions dynamic_length() {
  CompileOptions o;
  o.dynamic_dims = {{"x", 1, kBound}, {"positions", 0, kBound}};
  return o;
}

TEST(SpecializedSizes, ProgramPrefillAtEveryLengthEqualsTheGraphRecordedThere) {
  std::unique_ptr<Graph> exported = read_graph_json(kFixture);
  const State initial = module_state(*exported);
  State borrowed = copy_of(initial);
  std::unique_ptr<Graph> g = state_as_attributes(*exported, borrowed);
  MethodSource prefill{"prefill",
                       g.get(),
                       {seeded_uniform({1, kExample, 8}, 1), arange(kExample)},
                       dynamic_length()};
  std::shared_ptr<const Program> program = compile_program({prefill});
  auto session = program->new_session();
  for (int64_t length = 1; length <= kBound; ++length) {
    session->reset();
    const Tensor x = seeded_uniform({1, length, 8}, 100 + static_cast<uint32_t>(length));
    std::vector<Tensor> out =
        session->run("prefill", {{"x", x.clone()}, {"positions", arange(length)}});
    Reference want = eager_at(*exported, initial, x, arange(length));
    ASSERT_EQ(out.size(), want.outputs.size());
    EXPECT_EQ(out[0].shape(), (Shape{1, length, 5})) << "length " << length;
    EXPECT_TRUE(tensor_equal(out[0], want.outputs[0], 1e-5)) << "length " << length;
    for (const std::string& cache : kCaches)
      EXPECT_TRUE(tensor_equal(session->state(cache), want.state.at(cache), 1e-5))
          << cache << " at length " << length;
  }
}

TEST(SpecializedSizes, SingleEngineAtEveryLengthEqualsTheGraphRecordedThere) {
  std::unique_ptr<Graph> exported = read_graph_json(kFixture);
  const State initial = module_state(*exported);
  State state = copy_of(initial);
  std::unique_ptr<Graph> g = state_as_attributes(*exported, state);
  CompiledProgram cp =
      compile(*g, {seeded_uniform({1, kExample, 8}, 1), arange(kExample)}, dynamic_length());
  ExecutionContext ctx(cp.engine);
  for (int64_t length = 1; length <= kBound; ++length) {
    for (const std::string& cache : kCaches) state.at(cache).copy_from(initial.at(cache));
    const Tensor x = seeded_uniform({1, length, 8}, 200 + static_cast<uint32_t>(length));
    Tensor bound_x = x.clone(), positions = arange(length);
    ctx.bind_input(0, bound_x);
    ctx.bind_input(1, positions);
    for (const auto& [index, target] : cp.lifted_buffers) ctx.bind_input(index, state.at(target));
    std::vector<Tensor> out = ctx.execute();
    Reference want = eager_at(*exported, initial, x, positions);
    EXPECT_TRUE(tensor_equal(out[0], want.outputs[0], 1e-5)) << "length " << length;
    for (const std::string& cache : kCaches)
      EXPECT_TRUE(tensor_equal(state.at(cache), want.state.at(cache), 1e-5))
          << cache << " at length " << length;
  }
}

// A split of the dynamic dim into static entries is refused, naming the node; with the example
// at the bound it is left as written (it plans and runs there as captured).
TEST(SpecializedSizes, AnUnclearSplitIsRefusedNamingTheNode) {
  GraphBuilder b("split");
  Node* x = b.placeholder("x");
  b.output(arg::tuple({b.call_function("aten.view.default",
                                       {x, Value::list({Value::integer(2), Value::integer(3)})})}));
  std::unique_ptr<Graph> split = b.build();
  CompileOptions o;
  o.dynamic_dims = {{"x", 0, 12}};
  try {
    compile(*split, {seeded_uniform({6}, 1)}, o);
    FAIL() << "a split of the dynamic dim into static entries was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'view'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("split"), std::string::npos) << e.what();
  }
  o.dynamic_dims = {{"x", 0, 6}};
  CompiledProgram at_bound = compile(*split, {seeded_uniform({6}, 1)}, o);
  ExecutionContext ctx(at_bound.engine);
  Tensor six = seeded_uniform({6}, 2);
  ctx.bind_input(0, six);
  EXPECT_TRUE(tensor_equal(ctx.execute()[0], six.reshape({2, 3}), 0));
}

}  // namespace
}  // namespace inplace::testing
