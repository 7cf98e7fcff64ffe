// The `inplace` program, run as a separate process: help and version, print, exec in eager
// mode (values of outputs, inputs after in-place writes, buffers), and every failure as one
// line on stderr with exit 1 (2 for usage mistakes).
#include "cli/cli_util.h"
#include "frontend/graph_json.h"
#include "frontend/safetensors.h"
#include "ir/builder.h"
#include "test_util.h"

namespace inplace {
namespace {

using namespace inplace::testing;
namespace fs = std::filesystem;

bool registered(const std::string& target) {
  return !Registry::get().canonical_name(target, nullptr).empty();
}

TEST_F(Cli, HelpAndVersion) {
  CliResult r = run("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("usage: inplace <command>"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exec"), std::string::npos);
  EXPECT_NE(r.out.find("print"), std::string::npos);
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(run("help").out, r.out);
  r = run("exec --help");
  EXPECT_EQ(r.code, 0);
  for (const char* opt : {"--inputs", "--out", "--mode", "--no-alias", "--mutated-input"})
    EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
  r = run("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, std::string("inplace ") + INPLACE_VERSION + "\n");
}

TEST_F(Cli, UsageMistakesExitTwo) {
  EXPECT_TRUE(one_line_error(run(""), 2, {"no command given"}));
  EXPECT_TRUE(one_line_error(run("frobnicate"), 2, {"unknown command 'frobnicate'"}));
  // Wrong argument counts.
  EXPECT_TRUE(one_line_error(run("print"), 2, {"print: missing GRAPH.json"}));
  EXPECT_TRUE(one_line_error(run("print a.json b.json"), 2, {"unexpected argument 'b.json'"}));
  EXPECT_TRUE(one_line_error(run("exec g.json"), 2, {"missing required option --out"}));
  EXPECT_TRUE(one_line_error(run("exec g.json --out"), 2, {"option '--out' needs a value"}));
  EXPECT_TRUE(one_line_error(run("exec g.json --out o --frob"), 2, {"unknown option '--frob'"}));
  EXPECT_TRUE(one_line_error(run("exec g.json --out o --mode fast"), 2, {"unknown mode 'fast'"}));
  EXPECT_TRUE(one_line_error(run("exec g.json --out o --out p"), 2, {"'--out' is given twice"}));
  EXPECT_TRUE(one_line_error(run("exec g.json --out o --mutated-input x"), 2,
                             {"--mutated-input takes INPUT=OUTPUT, got 'x'"}));
  EXPECT_TRUE(one_line_error(run("exec g.json --out o --mutated-input x=y"), 2,
                             {"OUTPUT must be an output index"}));
  EXPECT_TRUE(
      one_line_error(run("print --format=yaml g.json"), 2, {"--format must be text or json"}));
}

TEST_F(Cli, EveryModeReportsAMissingGraphFile) {
  for (const char* mode : {"eager", "compiled", "functional"}) {
    CliResult r = run(std::string("exec missing.json --out o --mode ") + mode);
    EXPECT_TRUE(one_line_error(r, 1, {"missing.json"})) << mode;
  }
}

TEST_F(Cli, PrintShowsTheGraph) {
  const std::string fixture = kFixtures + "/torch_level.json";
  CliResult r = run("print " + fixture);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, read_graph_json(fixture)->to_string());
  r = run("print --format json " + fixture);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_graph_json_string(r.out, kFixtures)->to_string(),
            read_graph_json(fixture)->to_string());
}

TEST_F(Cli, ExecEagerWritesOutputsInputsAndBuffers) {
  // No ops needed: outputs are placeholders, their defaults and a constant.
  GraphBuilder b("passthrough");
  Node* x = b.placeholder("x");
  Node* n = b.placeholder("n", 3);
  Node* f = b.placeholder("f", 2.5);
  Node* flag = b.placeholder("flag", true);
  Node* w = b.get_attr("layer.w", lt({7, 8, 9}, {3}));
  b.outputs({x, arg::tuple({w, n}), f, flag});
  std::string g = write_graph(*b.build());
  Tensor xin = iota({2, 2}, DType::kBFloat16);
  write_safetensors(path("in.safetensors"), {{"x", xin}});
  CliResult r = run("exec " + g + " --inputs " + path("in.safetensors") + " --out " +
                    path("out.safetensors") + " --mode eager");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  auto out = read_safetensors(path("out.safetensors"));
  std::vector<std::string> keys;
  for (auto& [k, v] : out) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"buffer.layer.w", "input.f", "input.flag", "input.n",
                                            "input.x", "output.0", "output.1", "output.2",
                                            "output.3", "output.4"}));
  EXPECT_TRUE(tensor_equal(out.at("output.0"), xin));
  EXPECT_TRUE(tensor_equal(out.at("output.1"), lt({7, 8, 9}, {3})));
  // Python numbers as 0-d tensors: int -> int64, float -> float64, bool -> bool.
  EXPECT_TRUE(tensor_equal(out.at("output.2"), Tensor::scalar(Scalar(int64_t{3}), DType::kInt64)));
  EXPECT_TRUE(tensor_equal(out.at("output.3"), Tensor::scalar(Scalar(2.5), DType::kFloat64)));
  EXPECT_TRUE(tensor_equal(out.at("output.4"), Tensor::scalar(Scalar(true), DType::kBool)));
  EXPECT_TRUE(tensor_equal(out.at("input.x"), xin));
  EXPECT_TRUE(tensor_equal(out.at("buffer.layer.w"), lt({7, 8, 9}, {3})));
}

TEST_F(Cli, ExecSkipsNoneOutputsAndRejectsStrings) {
  GraphBuilder b("none_out");
  Node* x = b.placeholder("x");
  b.outputs({nullptr, x});
  std::string g = write_graph(*b.build());
  write_safetensors(path("in.safetensors"), {{"x", ft({4}, {1})}});
  const std::string io =
      " --inputs " + path("in.safetensors") + " --out " + path("out.safetensors");
  CliResult r = run("exec " + g + io);
  ASSERT_EQ(r.code, 0) << r.err;
  auto out = read_safetensors(path("out.safetensors"));
  EXPECT_FALSE(out.count("output.0"));
  EXPECT_TRUE(tensor_near(out.at("output.1"), {1}, {4}));

  GraphBuilder b2("string_out");
  b2.placeholder("x");
  b2.output(arg::tuple({"text"}));
  std::string g2 = write_graph(*b2.build(), "g2.json");
  EXPECT_TRUE(one_line_error(run("exec " + g2 + io), 1, {"[exec] output 0 is str"}));
}

TEST_F(Cli, ExecMutatedInputWritesAnOutputBack) {
  GraphBuilder b("write_back");
  Node* x = b.placeholder("x");
  Node* y = b.placeholder("y");
  b.outputs({y, x});
  std::string g = write_graph(*b.build());
  write_safetensors(path("in.safetensors"), {{"x", ft({1, 2}, {2})}, {"y", ft({5, 6}, {2})}});
  const std::string io =
      " --inputs " + path("in.safetensors") + " --out " + path("out.safetensors");
  CliResult r = run("exec " + g + io + " --mutated-input x=output.0");
  ASSERT_EQ(r.code, 0) << r.err;
  auto out = read_safetensors(path("out.safetensors"));
  EXPECT_TRUE(tensor_near(out.at("input.x"), {2}, {5, 6}));
  EXPECT_TRUE(tensor_near(out.at("input.y"), {2}, {5, 6}));
  // output.1 is x itself, so it shows the written-back value too.
  EXPECT_TRUE(tensor_near(out.at("output.1"), {2}, {5, 6}));
  EXPECT_TRUE(one_line_error(run("exec " + g + io + " --mutated-input x=2"), 1,
                             {"--mutated-input x=2: the graph has 2 outputs"}));
  EXPECT_TRUE(one_line_error(run("exec " + g + io + " --mutated-input q=0"), 1,
                             {"--mutated-input names 'q'", "user placeholders: x, y"}));
}

TEST_F(Cli, ExecShowsAnInPlaceAdd) {
  if (!registered("add_")) GTEST_SKIP() << "add_ is not registered yet";
  GraphBuilder b("iadd");
  Node* x = b.placeholder("x");
  Node* y = b.placeholder("y");
  Node* a = b.call_method("add_", {x, y});
  b.output(arg::tuple({a}));
  std::string g = write_graph(*b.build());
  write_safetensors(path("in.safetensors"),
                    {{"x", ft({1, 2, 3}, {3})}, {"y", ft({10, 20, 30}, {3})}});
  CliResult r = run("exec " + g + " --inputs " + path("in.safetensors") + " --out " +
                    path("out.safetensors"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto out = read_safetensors(path("out.safetensors"));
  EXPECT_TRUE(tensor_near(out.at("output.0"), {3}, {11, 22, 33}));
  EXPECT_TRUE(tensor_near(out.at("input.x"), {3}, {11, 22, 33}));  // the mutation shows
  EXPECT_TRUE(tensor_near(out.at("input.y"), {3}, {10, 20, 30}));
}

TEST_F(Cli, ExecAtenFixtureAppliesTheSignature) {
  const std::string fixture = kFixtures + "/aten_level.json";
  auto graph = read_graph_json(fixture);  // kept alive: the loop walks its nodes
  for (const Node* n : graph->nodes())
    if (n->is_call() && !registered(n->target))
      GTEST_SKIP() << n->target << " is not registered yet";
  write_safetensors(path("in.safetensors"),
                    {{"x", iota({2, 3})},
                     {"k", ft({100, 101, 102, 103, 104, 105}, {1, 2, 1, 3})},
                     {"idx", lt({2}, {1})}});
  CliResult r = run("exec " + fixture + " --inputs " + path("in.safetensors") + " --out " +
                    path("out.safetensors"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto out = read_safetensors(path("out.safetensors"));
  // Only the user output is an output; the buffer mutation lands in buffer.cache.
  EXPECT_FALSE(out.count("output.1"));
  EXPECT_TRUE(tensor_near(out.at("output.0"), {2, 3}, {1, -0.5, 10, 7, 5.5, 16}));
  std::vector<double> cache(24, 0.0);
  for (int c = 0; c < 2; ++c)
    for (int j = 0; j < 3; ++j) cache[c * 12 + j] = cache[c * 12 + 6 + j] = 100 + c * 3 + j;
  EXPECT_TRUE(tensor_near(out.at("buffer.cache"), {1, 2, 4, 3}, cache));
  EXPECT_TRUE(tensor_near(out.at("input.b_cache"), {1, 2, 4, 3}, cache));
  EXPECT_TRUE(tensor_near(out.at("buffer._tensor_constant0"), {3}, {0.5, -1.25, 3.0}));
}

TEST_F(Cli, ExecErrorsAreOneLine) {
  std::ofstream(path("bad.json")) << "{\"format\": \"inplace.graph\", \"version\": 1, \"nodes\": [";
  EXPECT_TRUE(one_line_error(run("exec " + path("bad.json") + " --out " + path("o")), 1,
                             {"[graph_json] " + path("bad.json") + ": invalid JSON"}));
  EXPECT_TRUE(one_line_error(run("print " + path("missing.json")), 1, {"cannot open"}));

  GraphBuilder b("unknown");
  Node* x = b.placeholder("x");
  b.output(b.call_function("torch.frobnicate", {x}, {}, "frob"));
  std::string g = write_graph(*b.build());
  write_safetensors(path("in.safetensors"), {{"x", ft({1}, {1})}});
  EXPECT_TRUE(one_line_error(
      run("exec " + g + " --inputs " + path("in.safetensors") + " --out " + path("o")), 1,
      {"[node frob] unknown op 'torch.frobnicate'"}));

  GraphBuilder b2("two_inputs");
  Node* p = b2.placeholder("p");
  b2.placeholder("q");
  b2.output(p);
  std::string g2 = write_graph(*b2.build(), "g2.json");
  write_safetensors(path("p.safetensors"), {{"p", ft({1}, {1})}});
  EXPECT_TRUE(one_line_error(
      run("exec " + g2 + " --inputs " + path("p.safetensors") + " --out " + path("o")), 1,
      {"missing input 'q'", "p.safetensors has no tensor 'q'"}));
  EXPECT_TRUE(one_line_error(run("exec " + g2 + " --out " + path("o")), 1, {"missing input 'p'"}));
  write_safetensors(path("extra.safetensors"),
                    {{"p", ft({1}, {1})}, {"q", ft({1}, {1})}, {"r", ft({1}, {1})}});
  EXPECT_TRUE(one_line_error(
      run("exec " + g2 + " --inputs " + path("extra.safetensors") + " --out " + path("o")), 1,
      {"tensor 'r' matches no user placeholder", "(user placeholders: p, q)"}));
  std::ofstream(path("corrupt.safetensors")) << "not a safetensors file";
  EXPECT_TRUE(one_line_error(
      run("exec " + g2 + " --inputs " + path("corrupt.safetensors") + " --out " + path("o")), 1,
      {"[safetensors] " + path("corrupt.safetensors")}));
  EXPECT_FALSE(fs::exists(path("o")));  // nothing written on failure
}

TEST_F(Cli, ExecWrongOpArgumentCountNamesTheNode) {
  if (!registered("torch.add")) GTEST_SKIP() << "add is not registered yet";
  GraphBuilder b("bad_call");
  Node* x = b.placeholder("x");
  b.output(b.call_function("torch.add", {x, x, x, x, x}, {}, "too_many"));
  std::string g = write_graph(*b.build());
  write_safetensors(path("in.safetensors"), {{"x", ft({1}, {1})}});
  EXPECT_TRUE(one_line_error(
      run("exec " + g + " --inputs " + path("in.safetensors") + " --out " + path("o")), 1,
      {"too_many", "torch.add"}));
}

}  // namespace
// The deployment path end to end: compile the streaming decoder to a file, run the file, and
// compare with the eager run of the graph. An engine file has no buffers (its constants are
// weights), so buffer.* entries are left out of the comparison, and named as left out.
TEST_F(Cli, EngineFileOfTheStreamingDecoderEqualsEager) {
  const std::string dir = INPLACE_SOURCE_DIR "/examples/streaming_decoder";
  const std::string in = " --inputs " + dir + "/inputs.safetensors";
  ASSERT_EQ(run("compile " + dir + "/graph.json" + in + " -o " + path("d.inplace")).code, 0);
  ASSERT_EQ(run("exec " + path("d.inplace") + in + " --out " + path("e.safetensors")).code, 0);
  ASSERT_EQ(
      run("exec " + dir + "/graph.json" + in + " --mode eager --out " + path("r.safetensors")).code,
      0);
  CliResult full = run("compare " + path("e.safetensors") + " " + path("r.safetensors"));
  EXPECT_TRUE(one_line_error(full, 1, {"buffer."}));
  CliResult c = run("compare " + path("e.safetensors") + " " + path("r.safetensors") +
                    " --ignore buffer. --tol 1e-6");
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("ignored"), std::string::npos) << c.out;
}

TEST_F(Cli, OpsListsSchemasWithTheirEngineForm) {
  CliResult r = run("ops --filter topk");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("out      topk(Tensor self, SymInt k, int dim=-1"), std::string::npos)
      << r.out;
  // An op whose compute is a kernel of the table (not its declaration) is an out op too.
  CliResult add = run("ops --filter 'add.Tensor('");
  EXPECT_NE(add.out.find("out      add.Tensor(Tensor self"), std::string::npos) << add.out;
  CliResult all = run("ops --engine-only");
  EXPECT_NE(all.out.find("kv_cache_update"), std::string::npos);
  EXPECT_NE(all.out.find("view     transpose.int(Tensor(a) self"), std::string::npos) << all.out;
  EXPECT_EQ(all.out.find("inplace  add_.Tensor"), std::string::npos);
  EXPECT_NE(run("ops --filter add_").out.find("inplace  add_.Tensor(Tensor(a!) self"),
            std::string::npos);
}

// A shape whose element count wraps int64 is one clear error in every mode, never a wrong result.
TEST_F(Cli, HugeShapeIsAnErrorInEveryMode) {
  std::ofstream(path("big.json")) << R"({"format": "inplace.graph", "version": 1, "nodes": [
    {"name": "z", "op": "call_function", "target": "torch.ones",
     "args": [[4294967296, 4294967296]], "kwargs": {}},
    {"name": "s", "op": "call_function", "target": "torch.sum", "args": [{"node": "z"}]},
    {"name": "output", "op": "output", "target": "output", "args": [{"node": "s"}]}]})";
  for (const char* mode : {"eager", "functional", "compiled"})
    EXPECT_TRUE(one_line_error(run(std::string("exec ") + path("big.json") + " --out " +
                                   path("o.safetensors") + " --mode " + mode),
                               1, {"[4294967296,4294967296]", "int64"}))
        << mode;
}

}  // namespace inplace
