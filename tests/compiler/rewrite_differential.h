// Differential tests of one rewrite: the same graph compiled with and without it (by name, in
// CompileOptions::skip_passes) runs on the same fresh inputs; every output and the final value
// of every input must agree within the rewrite's stated tolerance. Each engine is built once and
// called on every draw, as a decoder is.
#pragma once
#include <string>
#include <vector>

#include "compiler/differential.h"

namespace inplace::testing {

// The engine's outputs and its inputs after the call (caches written in place).
struct EngineCall {
  std::vector<Tensor> outputs, inputs;
};

class CompiledOnce {
 public:
  CompiledOnce(const Graph& g, const std::vector<Tensor>& example, CompileOptions options)
      : g_(g), program_(compile(g, clones(example), options)) {}
  EngineCall call(const std::vector<Tensor>& draw) const {
    EngineCall r;
    r.inputs = clones(draw);
    State state = initial_state(g_);
    ExecutionContext ctx(program_.engine);
    for (int i = 0; i < program_.num_user_inputs; ++i) ctx.bind_input(i, r.inputs[i]);
    for (const auto& [index, target] : program_.lifted_buffers)
      ctx.bind_input(index, state.at(target));
    r.outputs = ctx.execute();
    return r;
  }
  std::string plan() const { return program_.engine->describe(); }

 private:
  const Graph& g_;
  CompiledProgram program_;
};

// Two engines of one graph (built once each) on the same draws: every output and the final value
// of every input must agree within `tol`.
inline void expect_engines_equal(const CompiledOnce& a, const CompiledOnce& b,
                                 const std::vector<std::vector<Tensor>>& draws, double tol) {
  for (size_t d = 0; d < draws.size(); ++d) {
    SCOPED_TRACE(str_cat("draw ", d));
    EngineCall x = a.call(draws[d]), y = b.call(draws[d]);
    EXPECT_EQ(x.outputs.size(), y.outputs.size());
    for (size_t j = 0; j < std::min(x.outputs.size(), y.outputs.size()); ++j)
      EXPECT_TRUE(tensor_equal(x.outputs[j], y.outputs[j], tol)) << "output " << j;
    for (size_t i = 0; i < x.inputs.size(); ++i)
      EXPECT_TRUE(tensor_equal(x.inputs[i], y.inputs[i], tol)) << "input " << i;
  }
}

// Compiles `g` with every pass and without `skipped`; runs both on each draw and expects
// them equal within `tol`. Returns the plan of the engine with every pass.
inline std::string expect_rewrite_exact(const Graph& g, const std::vector<Tensor>& example,
                                        const std::vector<std::vector<Tensor>>& draws,
                                        const std::vector<std::string>& skipped, double tol) {
  CompileOptions without;
  without.skip_passes = skipped;
  CompiledOnce with_rewrite(g, example, {}), without_rewrite(g, example, without);
  expect_engines_equal(with_rewrite, without_rewrite, draws, tol);
  return with_rewrite.plan();
}

// How often `needle` occurs in `text`.
inline int count_of(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// How many lines of `text` hold both `a` and `b`.
inline int lines_with(const std::string& text, const std::string& a, const std::string& b) {
  int n = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    n += line.find(a) != std::string::npos && line.find(b) != std::string::npos;
    start = end + 1;
  }
  return n;
}

}  // namespace inplace::testing
