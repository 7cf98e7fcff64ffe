#include "compiler/differential.h"

#include "engine/engine_file.h"

namespace inplace::testing {

namespace {

struct EngineUnderTest {
  std::string what;
  std::shared_ptr<const Engine> engine;
};

}  // namespace

int expect_engine_exact_on_draws(const Graph& g, const std::vector<Tensor>& example,
                                 const std::vector<std::vector<Tensor>>& draws, double tol,
                                 CompileOptions options) {
  std::vector<EngineUnderTest> engines;
  CompiledProgram program;
  for (bool alias : {true, false}) {
    options.alias = alias;
    CompiledProgram cp = compile(g, clones(example), options);
    engines.push_back({alias ? "aliased" : "copy-back", cp.engine});
    if (alias)
      engines.push_back({"engine file", deserialize_engine(serialize_engine(*cp.engine), "test")});
    if (alias) program = std::move(cp);
  }
  int accepted = 0;
  for (size_t d = 0; d < draws.size(); ++d) {
    std::string eager_error;
    EagerRun ref;
    try {
      ref = run_reference(g, draws[d]);
    } catch (const Error& e) {
      eager_error = e.what();
    }
    accepted += eager_error.empty();
    for (const EngineUnderTest& e : engines) {
      SCOPED_TRACE(str_cat(e.what, ", draw ", d));
      std::vector<Tensor> inputs = clones(draws[d]);
      State state = initial_state(g);
      ExecutionContext ctx(e.engine);
      std::vector<Tensor> outs;
      std::string error;
      try {
        for (int i = 0; i < program.num_user_inputs; ++i) ctx.bind_input(i, inputs[i]);
        for (const auto& [index, target] : program.lifted_buffers)
          ctx.bind_input(index, state.at(target));
        outs = ctx.execute();
      } catch (const Error& err) {
        error = err.what();
      }
      if (!eager_error.empty()) {
        EXPECT_FALSE(error.empty()) << "eager raised '" << eager_error << "' but the engine ran";
        for (size_t i = 0; i < inputs.size(); ++i)
          EXPECT_TRUE(tensor_equal(inputs[i], draws[d][i])) << "input " << i << " changed";
        continue;
      }
      EXPECT_TRUE(error.empty()) << "eager ran but the engine raised: " << error;
      if (!error.empty()) continue;
      EXPECT_GE(outs.size(), ref.outputs.size());
      for (size_t j = 0; j < std::min(outs.size(), ref.outputs.size()); ++j)
        EXPECT_TRUE(tensor_equal(outs[j], ref.outputs[j], tol))
            << "output " << j << ": " << shape_str(outs[j].shape()) << " vs eager "
            << shape_str(ref.outputs[j].shape());
      for (size_t i = 0; i < inputs.size(); ++i)
        EXPECT_TRUE(tensor_equal(inputs[i], ref.inputs[i], tol)) << "input " << i;
      for (const auto& [k, v] : ref.state)
        EXPECT_TRUE(tensor_equal(state.at(k), v, tol)) << "buffer " << k;
    }
  }
  return accepted;
}

}  // namespace inplace::testing
