// A graph carrying a torch.export signature, compiled through the library API
// (compiler/exported_program.h) exactly as `inplace exec --mode compiled` runs it, against the
// eager interpreter: parameters/buffers from the state (a session of exported_program(), whose
// runtime-owned buffer is written back into the caller's after the call), only user outputs
// returned.
#include <gtest/gtest.h>

#include <random>

#include "compiler/exported_program.h"
#include "frontend/graph_json.h"
#include "ir/export_signature.h"
#include "passes/pass_test_util.h"
#include "test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

const std::string kFixture = INPLACE_SOURCE_DIR "/tests/frontend/fixtures/aten_level.json";

GraphInputs user_inputs(std::mt19937& rng, int64_t slot) {
  return {{"x", Value::from_tensor(random_tensor({2, 3}, DType::kFloat32, rng))},
          {"k", Value::from_tensor(random_tensor({1, 2, 1, 3}, DType::kFloat32, rng))},
          {"idx", Value::from_tensor(lt({slot}, {1}))}};
}

GraphInputs clone_inputs(const GraphInputs& in) {
  GraphInputs out;
  for (const auto& [k, v] : in) out[k] = Value::from_tensor(v.tensor.clone());
  return out;
}

}  // namespace

TEST(ExportedProgram, SignatureRules) {
  auto g = read_graph_json(kFixture);
  EXPECT_TRUE(is_lifted_placeholder(*g, "b_cache"));
  EXPECT_FALSE(is_lifted_placeholder(*g, "x"));
  EXPECT_EQ(user_input_names(*g), (std::vector<std::string>{"x", "k", "idx"}));
  EXPECT_EQ(signature_mutations(*g, 2), (std::vector<DeclaredMutation>{{"b_cache", 0}}));
  EXPECT_TRUE(signature_mutations(*g, 3).empty());  // not one entry per output: ignored
}

TEST(ExportedProgram, CompiledEqualsEagerAndWritesTheBufferInPlace) {
  auto g = read_graph_json(kFixture);
  for (bool alias : {true, false}) {
    std::mt19937 rng(5);
    State eager_state = initial_state(*g);
    State state = initial_state(*g);
    const void* cache_memory = state.at("cache").data_ptr();
    CompileOptions options;
    options.alias = alias;
    GraphInputs first = user_inputs(rng, 1);
    GraphInputs compile_inputs = clone_inputs(first);
    CompiledProgram compiled = compile_exported(*g, compile_inputs, state, options);
    EXPECT_EQ(compiled.engine->aliased_io().size(), alias ? 1u : 0u);
    // One engine, several calls at different slots: each agrees with eager on the outputs,
    // the inputs and the buffer, and the buffer is still the state's own tensor.
    for (int64_t slot : {1, 3, 0, 2}) {
      GraphInputs eager_in = slot == 1 ? clone_inputs(first) : user_inputs(rng, slot);
      GraphInputs engine_in = clone_inputs(eager_in);
      std::vector<Value> want = run_exported_eager(*g, eager_in, eager_state);
      std::vector<Value> got = run_exported(compiled, *g, engine_in, state);
      ASSERT_EQ(got.size(), 1u) << "only the user output is returned";
      ASSERT_EQ(want.size(), got.size());
      EXPECT_TRUE(tensor_equal(got[0].tensor, want[0].tensor)) << "slot " << slot;
      EXPECT_TRUE(tensor_equal(state.at("cache"), eager_state.at("cache"))) << "slot " << slot;
      EXPECT_EQ(state.at("cache").data_ptr(), cache_memory);
      for (const char* name : {"x", "k", "idx"})
        EXPECT_TRUE(tensor_equal(engine_in.at(name).tensor, eager_in.at(name).tensor)) << name;
    }
  }
}
