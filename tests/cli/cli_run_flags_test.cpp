// The flags of the commands that run engines: --cuda-graph on|off (a cpu engine ignores it; a
// bad value is a usage error) and --stats (the context's counters on stdout) on `exec` and
// `run`; --strict-device and --device on `plan`.
#include "cli/cli_util.h"
#include "frontend/safetensors.h"
#include "ir/builder.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

using CliRunFlags = Cli;

std::unique_ptr<Graph> doubling() {
  GraphBuilder b("double");
  Node* x = b.placeholder("x");
  b.set_meta(x, {3}, DType::kFloat32);
  b.output(b.call_function("_operator.mul", {x, 2}));
  return b.build();
}

TEST_F(CliRunFlags, ExecCountsItsCallAndTakesTheGraphSwitch) {
  const std::string g = write_graph(*doubling());
  write_safetensors(path("in.safetensors"), {{"x", Tensor::from_vector<float>({1, 2, 3}, {3})}});
  const std::string io =
      " --inputs " + path("in.safetensors") + " --out " + path("out.safetensors");
  for (const char* graph : {"on", "off"}) {
    CliResult r = run("exec " + g + io + " --mode compiled --stats --cuda-graph " + graph);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, "stats: calls=1 host_scalar_reads=0 staged_inputs=0\n");
    EXPECT_TRUE(tensor_equal(read_safetensors(path("out.safetensors")).at("output.0"),
                             Tensor::from_vector<float>({2, 4, 6}, {3})));
  }
  CliResult bad = run("exec " + g + io + " --mode compiled --cuda-graph maybe");
  EXPECT_TRUE(one_line_error(bad, 2, {"--cuda-graph takes on or off, got 'maybe'"}));
  CliResult eager = run("exec " + g + io + " --stats");
  EXPECT_TRUE(one_line_error(eager, 2, {"--stats", "--mode compiled or an engine file"}));
  // A saved engine.
  ASSERT_EQ(run("compile " + g + " -o " + path("e.inplace")).code, 0);
  CliResult saved = run("exec " + path("e.inplace") + io + " --stats --cuda-graph off");
  ASSERT_EQ(saved.code, 0) << saved.err;
  EXPECT_EQ(saved.out, "stats: calls=1 host_scalar_reads=0 staged_inputs=0\n");
}

TEST_F(CliRunFlags, RunCountsEachSessionsMethods) {
  write_graph(*doubling(), "double.json");
  ASSERT_EQ(run("compile --method step=" + path("double.json") + " -o " + path("p.inplace")).code,
            0);
  write_safetensors(path("in.safetensors"), {{"x", Tensor::from_vector<float>({1, 2, 3}, {3})}});
  std::ofstream(path("calls.json"))
      << R"([{"session": "a", "method": "step", "inputs": "in.safetensors"},
             {"session": "a", "method": "step", "inputs": "in.safetensors"},
             {"session": "b", "method": "step", "inputs": "in.safetensors"}])";
  CliResult r = run("run " + path("p.inplace") + " --calls " + path("calls.json") + " --out " +
                    path("out.safetensors") + " --stats --cuda-graph off");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(
      r.out.find("stats: session a method step: calls=2 host_scalar_reads=0 staged_inputs=0\n"
                 "stats: session b method step: calls=1 host_scalar_reads=0 staged_inputs=0\n"),
      std::string::npos)
      << r.out;
  CliResult bad = run("run " + path("p.inplace") + " --calls " + path("calls.json") + " --out " +
                      path("out.safetensors") + " --cuda-graph 1");
  EXPECT_TRUE(one_line_error(bad, 2, {"run: --cuda-graph takes on or off, got '1'"}));
}

TEST_F(CliRunFlags, PlanForADeviceNamesWhatItCannotRun) {
  GraphBuilder b("g");
  Node* x = b.placeholder("x");
  b.set_meta(x, {4}, DType::kFloat32);
  b.output(b.call_function("torch.cumsum", {x, 0}));
  const std::string g = write_graph(*b.build());
  CliResult cpu = run("plan " + g + " --strict-device");
  ASSERT_EQ(cpu.code, 0) << cpu.err;  // the cpu has every kernel
#ifdef INPLACE_WITH_CUDA
  CliResult strict = run("plan " + g + " --device cuda --strict-device");
  EXPECT_TRUE(one_line_error(strict, 1, {"op 'cumsum' has no kernel for device 'cuda:0'"}));
  CliResult host = run("plan " + g + " --device cuda");
  EXPECT_NE(host.err.find("inplace: warning: [engine] 'g': node 'cumsum': op 'cumsum' has no "
                          "kernel for device 'cuda:0'; runs on the host, moving 32 bytes per call"),
            std::string::npos)
      << host.err;
  if (device_available(Device::cuda())) {
    ASSERT_EQ(host.code, 0) << host.err;
    EXPECT_NE(host.out.find("steps on the host:"), std::string::npos) << host.out;
  }
#endif
}

}  // namespace
