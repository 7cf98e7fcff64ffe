// Compiled == eager, checked the way every engine test needs it: the eager interpreter runs
// the program as written on copies of the inputs; the engine (aliased and copy-back) runs on
// other copies; every output and the final value of every input and buffer must agree, and
// every aliased output must be the caller's very tensor.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "engine/execution_context.h"
#include "interpreter/interpreter.h"
#include "test_util.h"

namespace inplace::testing {

// Deterministic float32 values in [-1, 1] on a 1/1000 grid, from a seed (no global RNG state).
inline Tensor seeded_uniform(Shape s, uint32_t seed) {
  Tensor t = Tensor::empty(s, DType::kFloat32);
  uint32_t x = seed * 2654435761u + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    x = x * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>((x >> 8) % 2001) / 1000.0f - 1.0f;
  }
  return t;
}

struct CompiledRun {
  CompiledProgram compiled;
  std::vector<Tensor> inputs;  // what the engine ran on (mutated in place)
  State state;
  std::vector<Tensor> outputs;  // user outputs
  std::vector<Tensor> all_outputs;
};

inline std::vector<Tensor> clones(const std::vector<Tensor>& v) {
  std::vector<Tensor> out;
  for (const Tensor& t : v) out.push_back(t.clone());
  return out;
}

inline CompiledRun run_compiled(const Graph& g, const std::vector<Tensor>& inputs, bool alias,
                                CompileOptions options = {}) {
  CompiledRun r;
  r.inputs = clones(inputs);
  r.state = initial_state(g);
  options.alias = alias;
  r.compiled = compile(g, r.inputs, options);
  ExecutionContext ctx(r.compiled.engine);
  for (int i = 0; i < r.compiled.num_user_inputs; ++i) ctx.bind_input(i, r.inputs[i]);
  for (const auto& [index, target] : r.compiled.lifted_buffers)
    ctx.bind_input(index, r.state.at(target));
  r.all_outputs = ctx.execute();
  for (int j = 0; j < r.compiled.engine->original_output_count(); ++j)
    r.outputs.push_back(r.all_outputs[j]);
  // Identity: an aliased output is the bound tensor itself.
  for (const Mutation& a : r.compiled.engine->aliased_io()) {
    const Tensor& out = r.all_outputs[a.output];
    const Tensor& in = a.input < r.compiled.num_user_inputs
                           ? r.inputs[a.input]
                           : r.state.at(r.compiled.program.context.input_names[a.input]);
    EXPECT_EQ(out.storage(), in.storage()) << "aliased output " << a.output;
    EXPECT_EQ(out.data_ptr(), in.data_ptr()) << "aliased output " << a.output;
  }
  return r;
}

struct EagerRun {
  std::vector<Tensor> inputs;
  State state;
  std::vector<Tensor> outputs;
};

inline EagerRun run_reference(const Graph& g, const std::vector<Tensor>& inputs) {
  EagerRun r;
  r.inputs = clones(inputs);
  r.state = initial_state(g);
  std::map<std::string, Value> in;
  auto ph = g.placeholders();
  for (size_t i = 0; i < ph.size(); ++i) in[ph[i]->name] = Value::from_tensor(r.inputs[i]);
  RunOutput out = run_eager(g, in, &r.state);
  for (const Value& v : out.flat) {
    if (v.is_tensor())
      r.outputs.push_back(v.tensor);
    else {
      Scalar s = v.as_scalar("output");
      r.outputs.push_back(Tensor::scalar(s, s.is_float() ? DType::kFloat64 : s.default_dtype()));
    }
  }
  return r;
}

// Runs eager, compiled (aliased) and compiled (copy-back); expects everything equal.
inline CompiledRun expect_compiled_equals_eager(const Graph& g, const std::vector<Tensor>& inputs,
                                                double tol = 0, CompileOptions options = {}) {
  EagerRun ref = run_reference(g, inputs);
  CompiledRun aliased;
  for (bool alias : {false, true}) {
    CompiledRun c = run_compiled(g, inputs, alias, options);
    const char* what = alias ? "aliased" : "copy-back";
    EXPECT_EQ(c.outputs.size(), ref.outputs.size()) << what;
    for (size_t j = 0; j < std::min(c.outputs.size(), ref.outputs.size()); ++j)
      EXPECT_TRUE(tensor_equal(c.outputs[j], ref.outputs[j], tol)) << what << " output " << j;
    for (size_t i = 0; i < inputs.size(); ++i)
      EXPECT_TRUE(tensor_equal(c.inputs[i], ref.inputs[i], tol)) << what << " input " << i;
    for (const auto& [k, v] : ref.state)
      EXPECT_TRUE(tensor_equal(c.state.at(k), v, tol)) << what << " buffer " << k;
    if (alias) aliased = std::move(c);
  }
  return aliased;
}

// Compile once, run on every value: the engine (aliased, copy-back, and the aliased one saved
// to an engine file and loaded back) is built once from `example`, then each draw runs through
// it and through the eager interpreter on fresh copies. Where eager raises, the engine must
// raise too and leave every input untouched; else every output and the final value of every
// input and buffer must agree. Returns how many draws eager accepted.
int expect_engine_exact_on_draws(const Graph& g, const std::vector<Tensor>& example,
                                 const std::vector<std::vector<Tensor>>& draws, double tol = 0,
                                 CompileOptions options = {});

}  // namespace inplace::testing
