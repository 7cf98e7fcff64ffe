// drop_eval_dropout: dropout in inference is the identity, so a compiled engine runs no dropout
// step (GPT-2 exported by torch.export has one per block; CUDA has no dropout kernel), and
// still equals eager on fresh inputs; dropout that trains, or that the output returns, stays.
#include <gtest/gtest.h>

#include <string>

#include "compiler/differential.h"
#include "frontend/graph_json.h"

namespace inplace::testing {
namespace {

const std::string kHf = std::string(INPLACE_SOURCE_DIR) + "/tests/frontend/fixtures/hf/";

int dropout_steps(const Engine& e) {
  int n = 0;
  for (const auto& s : e.plan().steps)
    n += s.op && s.op->schema.name.find("dropout") != std::string::npos;
  return n;
}

std::string graph(const std::string& train, bool returned) {
  std::string out = returned ? R"({"node": "d"})" : R"({"node": "m"})";
  return R"({"format": "inplace.graph", "version": 1, "name": "g", "nodes": [
    {"name": "x", "op": "placeholder", "target": "x", "args": [], "kwargs": {},
     "meta": {"shape": [3, 4], "dtype": "float32"}},
    {"name": "d", "op": "call_function", "target": "aten.dropout.default",
     "args": [{"node": "x"}, 0.1, )" +
         train + R"(], "kwargs": {}},
    {"name": "m", "op": "call_function", "target": "aten.mul.Tensor",
     "args": [{"node": "d"}, 2.0], "kwargs": {}},
    {"name": "output", "op": "output", "target": "output", "args": [)" +
         out + R"(], "kwargs": {}}]})";
}

TEST(DropEvalDropout, EvalDropoutLeavesNoStepAndEqualsEager) {
  auto g = read_graph_json_string(graph("false", false), "eval_dropout");
  std::vector<Tensor> draws[3];
  for (uint32_t s = 0; s < 3; ++s) draws[s] = {seeded_uniform({3, 4}, s + 1)};
  CompiledRun r = expect_compiled_equals_eager(*g, draws[0]);
  EXPECT_EQ(dropout_steps(*r.compiled.engine), 0);
  EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], {draws[1], draws[2]}, 0.0), 2);
}

TEST(DropEvalDropout, ReturnedDropoutStaysACopy) {
  auto g = read_graph_json_string(graph("false", true), "returned_dropout");
  std::vector<Tensor> x = {seeded_uniform({3, 4}, 7)};
  CompiledRun r = expect_compiled_equals_eager(*g, x);
  EXPECT_EQ(dropout_steps(*r.compiled.engine), 1);
  EXPECT_NE(r.outputs[0].data_ptr(), r.inputs[0].data_ptr());
}

TEST(DropEvalDropout, TrainingDropoutIsStillRefused) {
  auto g = read_graph_json_string(graph("true", false), "train_dropout");
  std::vector<Tensor> x = {seeded_uniform({3, 4}, 7)};
  EXPECT_THROW(compile(*g, x, {}), Error);
}

TEST(DropEvalDropout, Gpt2ExportHasNoDropoutStep) {
  auto g = read_graph_json(kHf + "gpt2.json");
  std::vector<Tensor> inputs;
  for (Node* p : g->placeholders()) {
    const Shape& shape = *p->meta.shape;
    if (*p->meta.dtype == DType::kInt64)
      inputs.push_back(Tensor::zeros(shape, DType::kInt64));
    else
      inputs.push_back(seeded_uniform(shape, static_cast<uint32_t>(inputs.size()) + 3));
  }
  CompiledProgram c = compile(*g, inputs, {});
  EXPECT_EQ(dropout_steps(*c.engine), 0);
}

}  // namespace
}  // namespace inplace::testing
