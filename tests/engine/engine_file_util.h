// Shared by the engine file tests: compile an example, run an engine on copies of its inputs.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "engine/engine_file.h"
#include "engine/execution_context.h"
#include "frontend/graph_json.h"
#include "frontend/safetensors.h"
#include "interpreter/interpreter.h"
#include "test_util.h"

namespace inplace::testing {

inline std::vector<std::string> engine_file_examples() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(INPLACE_SOURCE_DIR "/examples"))
    if (std::filesystem::exists(e.path() / "graph.json")) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

struct Example {
  std::unique_ptr<Graph> graph;
  std::vector<Tensor> inputs;  // one per placeholder
  CompiledProgram compiled;
};

inline Example compile_example(const std::string& dir, bool alias = true) {
  Example ex;
  ex.graph = read_graph_json(dir + "/graph.json");
  auto given = read_safetensors(dir + "/inputs.safetensors");
  for (Node* n : ex.graph->placeholders()) ex.inputs.push_back(given.at(n->name));
  CompileOptions co;
  co.alias = alias;
  ex.compiled = compile(*ex.graph, ex.inputs, co);
  return ex;
}

// The tensors bound to each input binding: user inputs, then lifted buffers.
inline std::vector<Tensor> binding_tensors(const Example& ex) {
  std::vector<Tensor> out(ex.compiled.engine->inputs().size());
  for (int i = 0; i < ex.compiled.num_user_inputs; ++i) out[i] = ex.inputs[i].clone();
  State state = initial_state(*ex.graph);
  for (const auto& [index, target] : ex.compiled.lifted_buffers)
    out[index] = state.at(target).clone();
  return out;
}

struct EngineRun {
  std::vector<Tensor> bound, outputs;
};

inline EngineRun run_engine(std::shared_ptr<const Engine> engine, std::vector<Tensor> bound) {
  EngineRun r;
  r.bound = std::move(bound);
  ExecutionContext ctx(engine);
  for (size_t i = 0; i < r.bound.size(); ++i) ctx.bind_input(static_cast<int>(i), r.bound[i]);
  r.outputs = ctx.execute();
  return r;
}

}  // namespace inplace::testing
