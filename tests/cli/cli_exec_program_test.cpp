// `inplace exec` on a program file: the state comes from the file, so the user's inputs alone
// run it (issue #30: the engine file of a module with a buffer needed the buffer passed in);
// outputs and final state equal the eager interpreter's on the graph. `--method` picks one of
// several methods; naming mistakes are one-line errors listing the valid names.
#include "cli/cli_util.h"
#include "engine/engine_file.h"
#include "frontend/graph_json.h"
#include "frontend/safetensors.h"
#include "inplace/program.h"
#include "ir/export_signature.h"
#include "program/exported_cache_module.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

class CliExecProgram : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    graph_ = exported_cache_module();
    GraphInputs inputs = {{"x", Value::from_tensor(cache_module_x(1))},
                          {"p", Value::from_tensor(cache_module_p(0))}};
    State bound = cache_module_state();
    compiled_ = compile_exported(*graph_, inputs, bound);
    program_ = exported_program(compiled_, *graph_, state_);
    write_safetensors(path("in.safetensors"), {{"x", x_}, {"p", p_}});
  }
  std::string exec(const std::string& file, const std::string& extra = "") const {
    return "exec " + file + " --inputs " + path("in.safetensors") + " --out " +
           path("out.safetensors") + extra;
  }
  // The eager interpreter's output and final cache for one call from the saved state.
  std::pair<Tensor, Tensor> eager() const {
    State state = cache_module_state();
    GraphInputs in = {{"x", Value::from_tensor(x_.clone())}, {"p", Value::from_tensor(p_)}};
    std::vector<Value> out = run_exported_eager(*graph_, in, state);
    return {out.at(0).tensor, state.at("cache")};
  }

  std::unique_ptr<Graph> graph_;
  State state_ = cache_module_state();
  CompiledProgram compiled_;
  std::shared_ptr<const Program> program_;
  Tensor x_ = cache_module_x(7), p_ = cache_module_p(2);
};

TEST_F(CliExecProgram, TheUsersInputsAloneRunAProgramFileLikeEager) {
  // The engine file alone needs the buffer (its caller's input): the failure of issue #30. It
  // runs as a one-method program (`forward`) on a Session, every binding an input.
  save_engine(*compiled_.engine, path("e.inplace"));
  EXPECT_TRUE(one_line_error(run(exec(path("e.inplace"))), 1,
                             {"missing input 'p_l_weight' of method 'forward'", "in.safetensors"}));

  save_program(*program_, path("p.inplace"));
  CliResult r = run(exec(path("p.inplace")));
  ASSERT_EQ(r.code, 0) << r.err;
  std::map<std::string, Tensor> got = read_safetensors(path("out.safetensors"));
  auto [output, cache] = eager();  // output.0 is the cache written, output.1 the sum
  ASSERT_TRUE(got.count("output.1") && got.count("state.cache")) << got.size();
  EXPECT_EQ(got["output.1"].to_double_vector(), output.to_double_vector());
  EXPECT_EQ(got["state.cache"].to_double_vector(), cache.to_double_vector());
  EXPECT_EQ(got["input.x"].to_double_vector(), x_.to_double_vector());
  EXPECT_EQ(got.count("state.l.weight"), 0u) << "a parameter is a weight, not state";
}

// `inplace compile GRAPH.json` writes a program file of one method `forward` (issue #30: one
// artifact): the parameters are its weights, the buffer it writes its state from the graph's
// constants, so exec runs it on the user's inputs alone, like the eager interpreter.
TEST_F(CliExecProgram, CompiledGraphRunsOnTheUsersInputsAlone) {
  for (const auto& [target, t] : state_) graph_->constants[target] = t;
  GraphJsonFileOptions o;
  o.constants_file = "state.safetensors";
  write_graph_json_file(*graph_, path("g.json"), o);
  CliResult c = run("compile " + path("g.json") + " --inputs " + path("in.safetensors") + " -o " +
                    path("c.inplace"));
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("method forward: 2 inputs"), std::string::npos) << c.out;
  std::shared_ptr<const Program> loaded = load_program(path("c.inplace"));
  ASSERT_EQ(loaded->methods().size(), 1u);
  EXPECT_EQ(loaded->methods()[0].call_input_names(), "'x', 'p'");
  ASSERT_EQ(loaded->state().size(), 1u) << "the parameters are weights, not state";
  EXPECT_EQ(loaded->state()[0].name, "cache");
  EXPECT_EQ(loaded->state()[0].ownership, Ownership::kRuntime);

  CliResult r = run(exec(path("c.inplace")));
  ASSERT_EQ(r.code, 0) << r.err;
  std::map<std::string, Tensor> got = read_safetensors(path("out.safetensors"));
  auto [output, cache] = eager();
  ASSERT_TRUE(got.count("output.1") && got.count("state.cache")) << got.size();
  EXPECT_EQ(got["output.1"].to_double_vector(), output.to_double_vector());
  EXPECT_EQ(got["state.cache"].to_double_vector(), cache.to_double_vector());
  EXPECT_NE(got["state.cache"].to_double_vector(), state_["cache"].to_double_vector())
      << "the call wrote the cache";
}

// `inplace compile --method` of a graph `inplace.export` wrote (the torch.export form) makes
// the same program (issue #30: it stored no weights and named the cache `b_cache`, a caller's
// input): the parameters are weights, the buffer runtime-owned state named by its target.
TEST_F(CliExecProgram, AnExportedGraphAsAMethodStoresItsWeightsAndItsStateByTarget) {
  for (const auto& [target, t] : state_) graph_->constants[target] = t;
  for (Node* n : graph_->placeholders()) {  // the example shapes, as inplace.export records them
    const SignatureInput* si = signature_input(*graph_, n->name);
    const Tensor& like = si->kind == "user_input" ? (n->name == "x" ? x_ : p_) : state_[si->target];
    n->meta.shape = like.shape();
    n->meta.dtype = like.dtype();
  }
  GraphJsonFileOptions o;
  o.constants_file = "state.safetensors";
  write_graph_json_file(*graph_, path("g.json"), o);
  CliResult c = run("compile --method forward=" + path("g.json") + " -o " + path("m.inplace"));
  ASSERT_EQ(c.code, 0) << c.err;
  std::shared_ptr<const Program> loaded = load_program(path("m.inplace"));
  EXPECT_EQ(loaded->methods()[0].call_input_names(), "'x', 'p'");
  EXPECT_EQ(loaded->weights().size(), 2u);
  ASSERT_EQ(loaded->state().size(), 1u);
  EXPECT_EQ(loaded->state()[0].name, "cache");
  EXPECT_EQ(loaded->state()[0].ownership, Ownership::kRuntime);

  CliResult r = run(exec(path("m.inplace")));
  ASSERT_EQ(r.code, 0) << r.err;
  std::map<std::string, Tensor> got = read_safetensors(path("out.safetensors"));
  auto [output, cache] = eager();
  ASSERT_TRUE(got.count("state.cache")) << got.size();
  // The method's outputs are the graph's user outputs (the buffer's write is a state write).
  EXPECT_EQ(got["output.0"].to_double_vector(), output.to_double_vector());
  EXPECT_EQ(got["state.cache"].to_double_vector(), cache.to_double_vector());
}

TEST_F(CliExecProgram, MethodPicksOneOfSeveralAndMistakesListTheNames) {
  const Method& m = program_->methods()[0];
  save_program(
      *Program::assemble("two", {m.engine, m.engine}, {"first", "second"}, program_->state()),
      path("two.inplace"));
  EXPECT_TRUE(one_line_error(run(exec(path("two.inplace"))), 1, {"'first', 'second'", "--method"}));
  EXPECT_TRUE(one_line_error(run(exec(path("two.inplace"), " --method third")), 1,
                             {"no method 'third'", "'first', 'second'"}));
  CliResult r = run(exec(path("two.inplace"), " --method second"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_safetensors(path("out.safetensors"))["state.cache"].to_double_vector(),
            eager().second.to_double_vector());
}

TEST_F(CliExecProgram, InputsThatAreNotTheMethodsAreNamed) {
  save_program(*program_, path("p.inplace"));
  write_safetensors(path("in.safetensors"), {{"x", x_}, {"p", p_}, {"cache", state_["cache"]}});
  EXPECT_TRUE(one_line_error(run(exec(path("p.inplace"))), 1,
                             {"tensor 'cache'", "'x', 'p'", "the program's own"}));
  write_safetensors(path("in.safetensors"), {{"x", x_}});
  EXPECT_TRUE(one_line_error(run(exec(path("p.inplace"))), 1, {"missing input 'p'", "'x', 'p'"}));
  write_graph(*graph_, "g.json");
  EXPECT_TRUE(one_line_error(run(exec(path("g.json"), " --method forward")), 2,
                             {"--method", "program file"}));
}

}  // namespace
