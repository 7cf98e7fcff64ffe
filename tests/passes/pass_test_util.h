// Helpers for the pass tests: random inputs, and the check every case ends with -- the eager
// interpreter on the original graph against the functional graph plus io_map write-back,
// comparing every output and the final value of every input and buffer.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "compiler/functional_runner.h"
#include "interpreter/interpreter.h"
#include "ir/builder.h"
#include "test_util.h"

namespace inplace::testing {

inline Tensor random_tensor(const Shape& shape, DType dtype, std::mt19937& rng) {
  Tensor t = Tensor::empty(shape, DType::kFloat64);
  std::uniform_real_distribution<double> real(-4.0, 4.0);
  std::uniform_int_distribution<int> small(-5, 5);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v =
        is_floating(dtype) ? real(rng) : (dtype == DType::kBool ? small(rng) > 0 : small(rng));
    if (dtype == DType::kUInt8) v = std::abs(v);
    t.data<double>()[i] = v;
  }
  return t.to(dtype);
}

using TensorMap = std::map<std::string, Tensor>;

inline std::map<std::string, Value> clone_inputs(const TensorMap& inputs) {
  std::map<std::string, Value> out;
  for (const auto& [k, v] : inputs) out[k] = Value::from_tensor(v.clone());
  return out;
}

inline ::testing::AssertionResult values_equal(const Value& a, const Value& b, double tol,
                                               const std::string& what) {
  if (a.is_tensor() != b.is_tensor())
    return ::testing::AssertionFailure()
           << what << ": " << a.kind_name() << " vs " << b.kind_name();
  if (a.is_tensor()) {
    auto r = tensor_equal(b.tensor, a.tensor, tol);
    if (!r) return ::testing::AssertionFailure() << what << ": " << r.message();
    return ::testing::AssertionSuccess();
  }
  if (a.to_string() != b.to_string())
    return ::testing::AssertionFailure()
           << what << ": " << a.to_string() << " vs " << b.to_string();
  return ::testing::AssertionSuccess();
}

struct Comparison {
  FunctionalProgram program;
  RunOutput eager, functional;
  std::map<std::string, Value> eager_inputs, functional_inputs;
  State eager_state, functional_state;
};

// Runs `graph` both ways on copies of `inputs`. `give_shapes`: the passes see the inputs'
// shapes (as exec gives them); otherwise they work from the graph alone.
inline ::testing::AssertionResult functional_matches_eager(const Graph& graph,
                                                           const TensorMap& inputs,
                                                           Comparison* out = nullptr,
                                                           bool give_shapes = true,
                                                           double tol = 0) {
  Comparison local;
  Comparison& c = out ? *out : local;
  c.eager_inputs = clone_inputs(inputs);
  c.eager_state = initial_state(graph);
  c.eager = run_eager(graph, c.eager_inputs, &c.eager_state);

  PassOptions options;
  if (give_shapes) options.input_metas = metas_of_inputs(c.eager_inputs);
  c.program = make_functional(graph, options);
  c.functional_inputs = clone_inputs(inputs);
  c.functional_state = initial_state(graph);
  c.functional = run_functional(c.program, c.functional_inputs, &c.functional_state);

  if (c.eager.flat.size() != c.functional.flat.size())
    return ::testing::AssertionFailure()
           << "eager has " << c.eager.flat.size() << " outputs, functional "
           << c.functional.flat.size() << "\n"
           << c.program.graph->to_string();
  for (size_t i = 0; i < c.eager.flat.size(); ++i) {
    auto r =
        values_equal(c.eager.flat[i], c.functional.flat[i], tol, "output " + std::to_string(i));
    if (!r) return r << "\n" << c.program.graph->to_string();
  }
  for (const auto& [name, v] : c.eager_inputs) {
    auto r = values_equal(v, c.functional_inputs.at(name), tol, "input '" + name + "'");
    if (!r) return r << "\n" << c.program.graph->to_string();
  }
  for (const auto& [name, t] : c.eager_state) {
    auto r = values_equal(Value::from_tensor(t), Value::from_tensor(c.functional_state.at(name)),
                          tol, "buffer '" + name + "'");
    if (!r) return r << "\n" << c.program.graph->to_string();
  }
  return ::testing::AssertionSuccess();
}

// The targets of the graph's call nodes, in order ("aten.add.Tensor", ...).
inline std::vector<std::string> call_targets(const Graph& g) {
  std::vector<std::string> out;
  for (Node* n : g.nodes())
    if (n->is_call()) out.push_back(n->target);
  return out;
}

inline int count_target(const Graph& g, const std::string& target) {
  int k = 0;
  for (Node* n : g.nodes()) k += n->is_call() && n->target == target;
  return k;
}

// The node the output's `i`-th flat leaf refers to (null when it is not a node).
inline Node* output_node(const Graph& g, size_t i) {
  std::vector<Value> flat;
  flatten_value(g.output()->args[0], &flat);
  return i < flat.size() && flat[i].is_node() ? flat[i].node : nullptr;
}

}  // namespace inplace::testing
