// `inplace compile --method`, `inplace inspect` and `inplace run` on a program: the replayed
// calls give what the same sessions give through the C++ API, and usage mistakes are one-line
// errors listing the valid names.
#include <fstream>

#include "backend/kernel_table.h"
#include "cli/cli_util.h"
#include "frontend/safetensors.h"
#include "program/program_test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

class CliProgram : public Cli {
 protected:
  // Writes the three method graphs with placeholder metas (the CLI's example shapes).
  void write_methods(const DecoderGraphs& g) {
    auto meta = [](Graph& graph, int64_t rows) {
      for (Node* n : graph.placeholders()) {
        if (n->name == "start") {
          n->meta.shape = Shape{};
          n->meta.dtype = DType::kInt64;
        } else {
          n->meta.shape = {1, 1, rows, kDim};
          n->meta.dtype = DType::kFloat32;
        }
      }
    };
    meta(*g.prefill, 5);
    meta(*g.decode, 1);
    meta(*g.peek, 1);
    write_graph(*g.prefill, "prefill.json");
    write_graph(*g.decode, "decode.json");
    write_graph(*g.peek, "peek.json");
  }
  std::string compile_args() const {
    return "compile --method prefill=" + path("prefill.json") +
           " --method decode=" + path("decode.json") + " --method peek=" + path("peek.json") +
           " --dynamic prefill.x:2:8 -o " + path("p.inplace");
  }
};

TEST_F(CliProgram, RunReplaysSessionsLikeTheApi) {
  DecoderGraphs g = decoder_graphs(false);
  write_methods(g);
  CliResult c = run(compile_args());
  ASSERT_EQ(c.code, 0) << c.err;
  CliResult inspect = run("inspect " + path("p.inplace"));
  ASSERT_EQ(inspect.code, 0) << inspect.err;
  EXPECT_TRUE(mentions(inspect.out, {"method prefill", "method peek", "layers.0.k_cache",
                                     "runtime-owned", "kv_cache_update"}))
      << inspect.out;

  // Session a: prompt 3 and 2 decodes; b: prompt 1 and a decode, interleaved; then a reset
  // of a and a prompt of 8 rows.
  std::vector<std::pair<std::string, Call>> calls;
  std::vector<Call> a = conversation(3, 2, 1), b = conversation(1, 1, 50),
                    a2 = conversation(8, 0, 90);
  for (size_t k = 0; k < a.size(); ++k) {
    calls.push_back({"a", a[k]});
    if (k < b.size()) calls.push_back({"b", b[k]});
  }
  std::string script = "[";
  for (size_t i = 0; i < calls.size(); ++i) {
    write_safetensors(path(str_cat("in", i, ".safetensors")), calls[i].second.inputs);
    script += str_cat(i ? "," : "", "{\"session\": \"", calls[i].first, "\", \"method\": \"",
                      calls[i].second.method, "\", \"inputs\": \"in", i, ".safetensors\"}");
  }
  script += ", {\"session\": \"a\", \"reset\": true}";
  size_t first_after_reset = calls.size() + 1;
  for (size_t k = 0; k < a2.size(); ++k) {
    size_t i = first_after_reset + k;
    write_safetensors(path(str_cat("in", i, ".safetensors")), a2[k].inputs);
    script += str_cat(", {\"session\": \"a\", \"method\": \"", a2[k].method, "\", \"inputs\": \"in",
                      i, ".safetensors\"}");
  }
  script += "]";
  std::ofstream(path("calls.json")) << script;
  CliResult r = run("run " + path("p.inplace") + " --calls " + path("calls.json") + " --out " +
                    path("out.safetensors"));
  ASSERT_EQ(r.code, 0) << r.err;
  std::map<std::string, Tensor> out = read_safetensors(path("out.safetensors"));

  auto program = decoder_program(g, false);
  std::map<std::string, std::unique_ptr<Session>> sessions;
  sessions["a"] = program->new_session();
  sessions["b"] = program->new_session();
  for (size_t i = 0; i < calls.size(); ++i) {
    std::vector<Tensor> want =
        sessions[calls[i].first]->run(calls[i].second.method, calls[i].second.inputs);
    for (size_t j = 0; j < want.size(); ++j)
      EXPECT_TRUE(tensor_equal(out.at(str_cat("call.", i, ".output.", j)), want[j])) << i;
  }
  sessions["a"]->reset();
  for (size_t k = 0; k < a2.size(); ++k) {
    std::vector<Tensor> want = sessions["a"]->run(a2[k].method, a2[k].inputs);
    EXPECT_TRUE(
        tensor_equal(out.at(str_cat("call.", first_after_reset + k, ".output.0")), want[0]));
  }
  for (const char* s : {"a", "b"})
    for (const char* name : {"layers.0.k_cache", "layers.0.count"})
      EXPECT_TRUE(
          tensor_equal(out.at(str_cat("session.", s, ".state.", name)), sessions[s]->state(name)))
          << s << " " << name;
}

// --device: compile every method for it (refused naming the method where it cannot be), run on
// it with inputs from host files and results saved from the host, or load on another device.
// The GPU half runs where this machine has one.
TEST_F(CliProgram, TheDeviceIsHonouredOrRefusedNamingTheMethod) {
  DecoderGraphs g = decoder_graphs(false);
  write_methods(g);
  CliResult c = run(compile_args());
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("for cpu"), std::string::npos) << c.out;
  EXPECT_NE(run("inspect " + path("p.inplace")).out.find(" on cpu:"), std::string::npos);
  const std::vector<Call> calls = conversation(3, 3, 7);
  std::string script = "[";
  for (size_t i = 0; i < calls.size(); ++i) {
    write_safetensors(path(str_cat("in", i, ".safetensors")), calls[i].inputs);
    script += str_cat(i ? "," : "", "{\"session\": \"a\", \"method\": \"", calls[i].method,
                      "\", \"inputs\": \"in", i, ".safetensors\"}");
  }
  std::ofstream(path("calls.json")) << script + "]";
  const std::string run_args = " --calls " + path("calls.json") + " --out ";
  ASSERT_EQ(run("run " + path("p.inplace") + run_args + path("cpu.safetensors")).code, 0);
  ASSERT_EQ(
      run("run " + path("p.inplace") + run_args + path("again.safetensors") + " --device cpu").code,
      0);
  const auto want = read_safetensors(path("cpu.safetensors"));
  for (const auto& [key, t] : read_safetensors(path("again.safetensors")))
    EXPECT_TRUE(tensor_equal(t, want.at(key))) << key;
  std::string why;
  if (!device_available(Device::cuda(), &why)) {
    EXPECT_TRUE(one_line_error(run(compile_args() + " --device cuda"), 1,
                               {"method 'prefill' for device 'cuda:0'", why}));
    EXPECT_TRUE(one_line_error(
        run("run " + path("p.inplace") + run_args + path("o.safetensors") + " --device cuda"), 1,
        {"method 'prefill'", "loading for device 'cuda:0'", why}));
    return;
  }
  CliResult gpu = run(compile_args() + " --device cuda");
  ASSERT_EQ(gpu.code, 0) << gpu.err;
  EXPECT_NE(gpu.out.find("for cuda:0"), std::string::npos) << gpu.out;
  ASSERT_EQ(run("run " + path("p.inplace") + run_args + path("gpu.safetensors")).code, 0);
  const auto got = read_safetensors(path("gpu.safetensors"));
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [key, t] : got) EXPECT_TRUE(tensor_equal(t, want.at(key), 1e-5)) << key;
}

TEST_F(CliProgram, MistakesAreOneLineErrorsListingTheValidNames) {
  DecoderGraphs g = decoder_graphs(false);
  write_methods(g);
  EXPECT_TRUE(one_line_error(run("compile --method prefill=" + path("prefill.json") +
                                 " --dynamic prefil.x:2:8 -o " + path("p.inplace")),
                             2, {"names no method 'prefil'", "methods: prefill"}));
  EXPECT_TRUE(one_line_error(run("compile " + path("prefill.json") + " --method prefill=" +
                                 path("prefill.json") + " -o " + path("p.inplace")),
                             2, {"not both"}));
  ASSERT_EQ(run(compile_args()).code, 0);
  std::ofstream(path("calls.json")) << "[{\"session\": 1, \"method\": \"generate\"}]";
  EXPECT_TRUE(one_line_error(run("run " + path("p.inplace") + " --calls " + path("calls.json") +
                                 " --out " + path("o.safetensors")),
                             1, {"no method 'generate'", "'prefill', 'decode', 'peek'"}));
  std::ofstream(path("calls.json")) << "[{\"method\": \"decode\"}]";
  EXPECT_TRUE(one_line_error(run("run " + path("p.inplace") + " --calls " + path("calls.json") +
                                 " --out " + path("o.safetensors")),
                             1, {"entry 0", "\"session\""}));
  write_safetensors(path("in.safetensors"), {{"tok", position(0)}});
  std::ofstream(path("calls.json"))
      << "[{\"session\": \"s\", \"method\": \"decode\", \"inputs\": \"in.safetensors\"}]";
  EXPECT_TRUE(one_line_error(run("run " + path("p.inplace") + " --calls " + path("calls.json") +
                                 " --out " + path("o.safetensors")),
                             1, {"entry 0", "no input 'tok'", "'x', 'start'"}));
}

}  // namespace
