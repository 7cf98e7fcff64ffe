// Shared by the runtime-contract tests (threads, overlapping bindings, strided inputs, failed
// calls): small programs with in-place state, compiled both ways, and their eager reference.
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "engine/execution_context.h"
#include "interpreter/interpreter.h"
#include "ir/graph.h"
#include "test_util.h"

namespace inplace::testing {

inline Value N(Node* n) {
  return Value::node_ref(n);
}

// state.add_(x); return (state * 2 + x.sum(),): a mutated input and a read-only one.
inline std::unique_ptr<Graph> state_update_graph() {
  auto g = std::make_unique<Graph>();
  g->name = "state_update";
  Node* st = g->add_node(NodeOp::kPlaceholder, "state", {}, {}, "state");
  Node* x = g->add_node(NodeOp::kPlaceholder, "x", {}, {}, "x");
  g->add_node(NodeOp::kCallFunction, "aten.add_.Tensor", {N(st), N(x)});
  Node* m = g->add_node(NodeOp::kCallFunction, "aten.mul.Tensor", {N(st), F(2.0)});
  Node* s = g->add_node(NodeOp::kCallFunction, "aten.sum.default", {N(x)});
  Node* r = g->add_node(NodeOp::kCallFunction, "aten.add.Tensor", {N(m), N(s)});
  g->add_node(NodeOp::kOutput, "output", {Tup({N(r)})});
  return g;
}

inline CompiledProgram compile_both(const Graph& g, const std::vector<Tensor>& examples,
                                    bool alias) {
  CompileOptions o;
  o.alias = alias;
  return compile(g, examples, o);
}

// The eager interpreter on `inputs` (which it updates in place, as PyTorch would).
inline std::vector<Tensor> eager_outputs(const Graph& g, const std::vector<std::string>& names,
                                         const std::vector<Tensor>& inputs) {
  std::map<std::string, Value> in;
  for (size_t i = 0; i < names.size(); ++i) in[names[i]] = Value::from_tensor(inputs[i]);
  State state = initial_state(g);
  RunOutput r = run_eager(g, in, &state);
  std::vector<Tensor> out;
  for (const Value& v : r.flat) out.push_back(v.tensor);
  return out;
}

}  // namespace inplace::testing
