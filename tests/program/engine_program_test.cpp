// program_from_engine: an engine compiled in process with the module's state as input bindings
// (the Python package's compile) becomes a one-method program: parameters the weights, the
// written buffer runtime-owned state starting from its value at the time, only the user's
// inputs per call. Its calls, saved or not, equal the eager interpreter's on the graph.
#include <gtest/gtest.h>

#include "inplace/program.h"
#include "program/exported_cache_module.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

State copy_of(const State& s) {
  State out;
  for (const auto& [k, v] : s) out[k] = v.clone();
  return out;
}

// The module compiled as the Python package does, then made a program from its state.
std::shared_ptr<const Program> cache_module_program(const Graph& g, const State& state,
                                                    std::map<std::string, std::string> meta = {}) {
  GraphInputs inputs = {{"x", Value::from_tensor(cache_module_x(1))},
                        {"p", Value::from_tensor(cache_module_p(0))}};
  State bound = copy_of(state);
  CompiledProgram compiled = compile_exported(g, inputs, bound);
  EngineProgramOptions options;
  options.metadata = std::move(meta);
  return exported_program(compiled, g, state, options);
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(got.to_double_vector(), want.to_double_vector()) << what;
}

// Three calls of a session against the eager interpreter on the graph, from the same state.
void expect_runs_like_eager(const Program& p, const Graph& g, const State& initial) {
  auto s = p.new_session();
  State eager = copy_of(initial);
  for (int64_t call = 0; call < 3; ++call) {
    Tensor x = cache_module_x(20 + call), pos = cache_module_p((call * 3) % 4);
    GraphInputs in = {{"x", Value::from_tensor(x.clone())}, {"p", Value::from_tensor(pos)}};
    std::vector<Value> want = run_exported_eager(g, in, eager);
    std::vector<Tensor> got = s->run("forward", {{"x", x}, {"p", pos}});
    ASSERT_EQ(got.size(), 2u);  // the buffer's new value, then the user output
    expect_same(got[1], want[0].tensor, str_cat("call ", call, " output"));
    expect_same(s->state("cache"), eager.at("cache"), str_cat("call ", call, " cache"));
    EXPECT_TRUE(got[0].same_storage(s->state("cache"))) << "the cache is written in place";
  }
  s->reset();
  expect_same(s->state("cache"), initial.at("cache"), "cache after reset()");
}

TEST(EngineProgram, ParametersBecomeWeightsAndTheBufferRuntimeState) {
  std::unique_ptr<Graph> g = exported_cache_module();
  State state = cache_module_state();
  std::shared_ptr<const Program> p = cache_module_program(*g, state);
  EXPECT_EQ(p->methods().size(), 1u);
  EXPECT_EQ(p->methods()[0].name, "forward");
  EXPECT_EQ(p->methods()[0].call_input_names(), "'x', 'p'");
  ASSERT_EQ(p->weights().size(), 2u);
  EXPECT_EQ(p->weights()[0].name, "l.weight");
  EXPECT_EQ(p->weights()[1].name, "l.bias");
  ASSERT_EQ(p->state().size(), 1u);
  EXPECT_EQ(p->state()[0].name, "cache");
  EXPECT_EQ(p->state()[0].ownership, Ownership::kRuntime);
  expect_runs_like_eager(*p, *g, state);
}

TEST(EngineProgram, SavedAndLoadedWithItsMetadata) {
  std::unique_ptr<Graph> g = exported_cache_module();
  State state = cache_module_state();
  std::shared_ptr<const Program> p =
      cache_module_program(*g, state, {{"python.call", "{\"user_inputs\": [\"x\", \"p\"]}"}});
  std::string bytes = serialize_program(*p);
  state.at("cache").fill(5.0);  // the file holds the value at the time, not the tensor
  std::shared_ptr<const Program> loaded = deserialize_program(bytes, "<memory>");
  EXPECT_EQ(loaded->metadata(), p->metadata());
  EXPECT_EQ(loaded->weights().size(), 2u);
  expect_runs_like_eager(*loaded, *g, cache_module_state());
}

TEST(EngineProgram, MetadataWithANewlineIsRefused) {
  std::unique_ptr<Graph> g = exported_cache_module();
  try {
    cache_module_program(*g, cache_module_state(), {{"python.call", "a\nb"}});
    FAIL() << "a value with a newline was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("metadata key 'python.call'"), std::string::npos)
        << e.what();
  }
}

TEST(EngineProgram, AValueOfAnotherShapeIsRefusedNamingTheBinding) {
  std::unique_ptr<Graph> g = exported_cache_module();
  State state = cache_module_state();
  GraphInputs inputs = {{"x", Value::from_tensor(cache_module_x(1))},
                        {"p", Value::from_tensor(cache_module_p(0))}};
  CompiledProgram compiled = compile_exported(*g, inputs, state);
  EngineProgramOptions options;
  options.state[compiled.engine->input_index("b_cache")] = {"cache",
                                                            Tensor::zeros({2, 3}, DType::kFloat32)};
  try {
    program_from_engine(compiled.engine, options);
    FAIL() << "a cache of the wrong shape was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("binding 'b_cache'"), std::string::npos) << e.what();
  }
}

// What the Python package's compiled module makes: every state binding caller-owned state
// under its binding name, bound once to the caller's tensors; the calls read the weights and
// write the cache there, equal to the eager interpreter.
TEST(EngineProgram, CallerStateBindingsAreBoundOnceToTheCallersTensors) {
  std::unique_ptr<Graph> g = exported_cache_module();
  State initial = cache_module_state();
  GraphInputs inputs = {{"x", Value::from_tensor(cache_module_x(1))},
                        {"p", Value::from_tensor(cache_module_p(0))}};
  State bound = copy_of(initial);
  CompiledProgram compiled = compile_exported(*g, inputs, bound);
  const std::map<std::string, std::string> targets = {
      {"p_l_weight", "l.weight"}, {"p_l_bias", "l.bias"}, {"b_cache", "cache"}};
  EngineProgramOptions options;
  for (const auto& [binding, target] : targets)
    options.caller_state.insert(compiled.engine->input_index(binding));
  std::shared_ptr<const Program> p = program_from_engine(compiled.engine, options);
  // Caller-owned state may be passed with a call too; bound once, it need not be.
  EXPECT_EQ(p->methods()[0].call_input_names(), "'p_l_weight', 'p_l_bias', 'b_cache', 'x', 'p'");
  EXPECT_TRUE(p->weights().empty()) << "the caller's tensors are not copied";
  ASSERT_EQ(p->state().size(), 3u);
  for (const StateEntry& e : p->state().entries()) {
    EXPECT_EQ(e.ownership, Ownership::kCaller) << e.name;
    EXPECT_TRUE(targets.count(e.name)) << e.name;
  }
  auto s = p->new_session();
  State mine = copy_of(initial), eager = copy_of(initial);
  for (const auto& [binding, target] : targets) s->bind_state(binding, mine.at(target));
  for (int64_t call = 0; call < 3; ++call) {
    Tensor x = cache_module_x(30 + call), pos = cache_module_p((call * 3) % 4);
    GraphInputs in = {{"x", Value::from_tensor(x.clone())}, {"p", Value::from_tensor(pos)}};
    std::vector<Value> want = run_exported_eager(*g, in, eager);
    std::vector<Tensor> got = s->run("forward", {{"x", x}, {"p", pos}});
    expect_same(got[1], want[0].tensor, str_cat("call ", call, " output"));
    expect_same(mine.at("cache"), eager.at("cache"), str_cat("call ", call, " cache"));
  }

  options.state[compiled.engine->input_index("b_cache")] = {"cache", initial.at("cache")};
  try {
    program_from_engine(compiled.engine, options);
    FAIL() << "a binding with a value and caller-owned was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("binding 'b_cache'"), std::string::npos) << e.what();
  }
}

}  // namespace
