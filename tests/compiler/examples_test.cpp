// Every example program: functional and compiled (aliased and copy-back) runs equal eager.
#include <filesystem>

#include "compiler/differential.h"
#include "frontend/graph_json.h"
#include "frontend/safetensors.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

std::vector<std::string> example_dirs() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(INPLACE_SOURCE_DIR "/examples"))
    if (std::filesystem::exists(e.path() / "graph.json")) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Examples, CompiledAndFunctionalEqualEager) {
  auto dirs = example_dirs();
  ASSERT_GE(dirs.size(), 3u);
  for (const std::string& dir : dirs) {
    SCOPED_TRACE(dir);
    auto g = read_graph_json(dir + "/graph.json");
    auto given = read_safetensors(dir + "/inputs.safetensors");
    std::vector<Tensor> inputs;
    std::map<std::string, Value> named;
    for (Node* n : g->placeholders()) {
      inputs.push_back(given.at(n->name));
      named[n->name] = Value::from_tensor(given.at(n->name).clone());
    }
    CompiledRun r = expect_compiled_equals_eager(*g, inputs, 1e-6);
    EXPECT_FALSE(r.compiled.engine->aliased_io().empty()) << r.compiled.engine->describe();

    // Functional mode: the lowered graph plus write-back leaves what eager leaves.
    EagerRun ref = run_reference(*g, inputs);
    FunctionalProgram fp = make_functional(*g);
    State state = initial_state(*g);
    RunOutput out = run_functional(fp, named, &state);
    ASSERT_EQ(out.flat.size(), ref.outputs.size());
    for (size_t j = 0; j < out.flat.size(); ++j)
      if (out.flat[j].is_tensor())
        EXPECT_TRUE(tensor_equal(out.flat[j].tensor, ref.outputs[j], 1e-6));
    auto ph = g->placeholders();
    for (size_t i = 0; i < ph.size(); ++i)
      EXPECT_TRUE(tensor_equal(named[ph[i]->name].tensor, ref.inputs[i], 1e-6)) << ph[i]->name;
    for (const auto& [k, v] : ref.state) EXPECT_TRUE(tensor_equal(state.at(k), v, 1e-6)) << k;
  }
}

}  // namespace
