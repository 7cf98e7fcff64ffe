// Shared by the engine file tests: compile an example, run an engine on copies of its inputs.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "engine/engine_file.h"
#include "engine/engine_file_codec.h"
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

// Editing engine files as a crafted-file attacker would: fields, then a valid checksum again.
inline std::string fix_checksum(std::string bytes) {
  uint64_t h = engine_file_checksum(std::string_view(bytes).substr(0, bytes.size() - 8));
  std::memcpy(bytes.data() + bytes.size() - 8, &h, 8);
  return bytes;
}

// File offsets where each field (its length prefix) starts, plus where the checksum starts.
inline std::vector<size_t> field_boundaries(const std::string& bytes) {
  std::vector<size_t> out;
  size_t pos = 16;
  for (uint32_t k = 0; k < kEngineFileFieldCount; ++k) {
    out.push_back(pos);
    uint64_t n = 0;
    std::memcpy(&n, bytes.data() + pos, 8);
    pos += 8 + n;
  }
  out.push_back(pos);
  return out;
}

inline std::vector<std::string> fields_of(const std::string& bytes) {
  std::vector<size_t> b = field_boundaries(bytes);
  std::vector<std::string> out;
  for (size_t k = 0; k + 1 < b.size(); ++k)
    out.push_back(bytes.substr(b[k] + 8, b[k + 1] - b[k] - 8));
  return out;
}

// A file from the fields before WEIGHTS (WEIGHTS is laid out again for `plan`'s constants).
inline std::string assemble(const std::vector<std::string>& fields, const Plan& plan) {
  engine_file::Writer w;
  w.raw(kEngineFileMagic, 8);
  w.u32(kEngineFileAbi);
  w.u32(kEngineFileFieldCount);
  for (uint32_t k = 0; k < kFieldWeights; ++k) w.str(fields[k]);
  w.str(engine_file::write_weights(plan, w.bytes().size() + 8));
  w.u64(engine_file_checksum(w.bytes()));
  return w.bytes();
}

}  // namespace inplace::testing
