// The files the `inplace` program reads and writes: every path must be a regular file (a FIFO,
// a directory or a device is a clear error, never a hang: each run here is killed after 60 s,
// which shows as exit 124), and no output may be written over one of the inputs.
#include <sys/stat.h>

#include "cli/cli_util.h"
#include "compiler/compile.h"
#include "engine/engine_file.h"
#include "frontend/graph_json.h"
#include "frontend/safetensors.h"
#include "ir/builder.h"

namespace inplace {
namespace {

using namespace inplace::testing;

constexpr int kTimeout = 60;

class CliFiles : public Cli {
 protected:
  // x + w, with the constant w in a safetensors file beside the graph.
  void SetUp() override {
    Cli::SetUp();
    GraphBuilder b("with_weights");
    Node* x = b.placeholder("x");
    Node* w = b.get_attr("w", ft({1, 2, 3}, {3}));
    b.output(arg::tuple({b.call_function("torch.add", {x, w})}));
    GraphJsonFileOptions o;
    o.constants_file = "w.safetensors";
    write_graph_json_file(*b.build(), path("g.json"), o);
    write_safetensors(path("in.safetensors"), {{"x", ft({10, 20, 30}, {3})}});
  }
  std::string fifo(const std::string& name) const {
    EXPECT_EQ(::mkfifo(path(name).c_str(), 0600), 0) << path(name);
    return path(name);
  }
  std::string exec_args(const std::string& graph, const std::string& inputs,
                        const std::string& out) const {
    return "exec " + graph + " --inputs " + inputs + " --out " + out;
  }
};

TEST_F(CliFiles, TheSetUpRuns) {
  CliResult r = run(exec_args(path("g.json"), path("in.safetensors"), path("o.safetensors")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(
      tensor_near(read_safetensors(path("o.safetensors")).at("output.0"), {3}, {11, 22, 33}));
}

TEST_F(CliFiles, FifoAsGraphInputsOrConstantFileIsAnError) {
  const std::string f = fifo("pipe");
  const std::string in = path("in.safetensors"), out = path("o.safetensors");
  for (const std::string& cmd :
       {exec_args(f, in, out), "print " + f, "compile " + f + " -o " + path("e.inplace"),
        "plan " + f, "inspect " + f})
    EXPECT_TRUE(
        one_line_error(run(cmd, kTimeout), 1, {"'" + f + "' is a FIFO, not a regular file"}))
        << cmd;
  EXPECT_TRUE(one_line_error(run(exec_args(path("g.json"), f, out), kTimeout), 1,
                             {"'" + f + "' is a FIFO"}));
  EXPECT_TRUE(one_line_error(run("compare " + f + " " + in, kTimeout), 1, {"is a FIFO"}));
  // The graph's constant file replaced by a FIFO: the error names the constant's node.
  fs::remove(path("w.safetensors"));
  fifo("w.safetensors");
  EXPECT_TRUE(one_line_error(run(exec_args(path("g.json"), in, out), kTimeout), 1,
                             {"w.safetensors' is a FIFO", "'w'"}));
}

TEST_F(CliFiles, DirectoryOrDeviceAsInputIsAnError) {
  const std::string out = path("o.safetensors");
  EXPECT_TRUE(one_line_error(run(exec_args(dir_.string(), path("in.safetensors"), out), kTimeout),
                             1, {"is a directory, not a regular file"}));
  EXPECT_TRUE(one_line_error(run(exec_args(path("g.json"), "/dev/zero", out), kTimeout), 1,
                             {"'/dev/zero' is a character device"}));
  EXPECT_TRUE(one_line_error(run("print /dev/null", kTimeout), 1, {"character device"}));
}

TEST_F(CliFiles, OutputThatIsNotARegularFileIsAnError) {
  const std::string f = fifo("out_pipe");
  EXPECT_TRUE(one_line_error(run(exec_args(path("g.json"), path("in.safetensors"), f), kTimeout), 1,
                             {"cannot write '" + f + "'", "FIFO"}));
  EXPECT_TRUE(one_line_error(run("compile " + path("g.json") + " --inputs " +
                                     path("in.safetensors") + " -o " + dir_.string(),
                                 kTimeout),
                             1, {"is a directory"}));
}

TEST_F(CliFiles, OutputOverAnInputIsRefused) {
  const std::string g = path("g.json"), in = path("in.safetensors"), w = path("w.safetensors");
  const std::string g_text = slurp(g), in_text = slurp(in), w_text = slurp(w);
  struct Case {
    std::string args, names;
  };
  // The same file spelt differently is still the same file.
  const std::string g_other = (dir_ / "." / "g.json").string();
  for (const Case& c :
       std::vector<Case>{{exec_args(g, in, g), "the graph"},
                         {exec_args(g, in, g_other), "the graph"},
                         {exec_args(g, in, in), "--inputs"},
                         {exec_args(g, in, w), "constant file"},
                         {"compile " + g + " --inputs " + in + " -o " + g_other, "the graph"},
                         {"compile " + g + " --inputs " + in + " -o " + in, "--inputs"},
                         {"compile " + g + " --inputs " + in + " -o " + w, "constant file"}}) {
    EXPECT_TRUE(one_line_error(run(c.args, kTimeout), 1,
                               {"is the same file as " + c.names, "refusing to overwrite"}))
        << c.args;
  }
  EXPECT_EQ(slurp(g), g_text);
  EXPECT_EQ(slurp(in), in_text);
  EXPECT_EQ(slurp(w), w_text);
  // A compiled program: exec may not write over the program file or its inputs either.
  ASSERT_EQ(run("compile " + g + " --inputs " + in + " -o " + path("e.inplace")).code, 0);
  const std::string e_text = slurp(path("e.inplace"));
  EXPECT_TRUE(one_line_error(run(exec_args(path("e.inplace"), in, path("e.inplace")), kTimeout), 1,
                             {"the same file as the program file"}));
  EXPECT_TRUE(one_line_error(run(exec_args(path("e.inplace"), in, in), kTimeout), 1, {"--inputs"}));
  EXPECT_EQ(slurp(path("e.inplace")), e_text);
  EXPECT_EQ(slurp(in), in_text);
  // An engine file of an older build: the same.
  std::unique_ptr<Graph> graph = read_graph_json(g);
  save_engine(*compile(*graph, {ft({10, 20, 30}, {3})}).engine, path("old.inplace"));
  EXPECT_TRUE(one_line_error(run(exec_args(path("old.inplace"), in, path("old.inplace")), kTimeout),
                             1, {"the same file as the engine file"}));
}

}  // namespace
}  // namespace inplace
