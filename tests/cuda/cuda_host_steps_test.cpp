// Steps on the host on a GPU (docs/cuda.md, "The device seam"): an op with no CUDA kernel
// (cumsum) between device steps and an in-place write compiles for cuda with a warning naming
// it and its bytes, runs on the host with its copies, and equals the cpu engine exactly over
// several calls, graphs on or off; such an engine captures no graph (counted); strict mode
// refuses it. The Hugging Face fixtures compiled for cuda put no step on the host.
#include <gtest/gtest.h>

#include "compiler/compile.h"
#include "cuda/cuda_test_util.h"
#include "engine/context_options.h"
#include "engine/execution_context.h"
#include "frontend/graph_json.h"
#include "test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

// x.add_(cumsum(x * 2, 0) + 1); returns the cumsum + 1.
std::unique_ptr<Graph> scan_and_write() {
  return read_graph_json_string(R"({"format": "inplace.graph", "version": 1, "name": "scan",
    "nodes": [
      {"name": "x", "op": "placeholder", "target": "x", "args": [], "kwargs": {}},
      {"name": "a", "op": "call_function", "target": "aten.mul.Scalar",
       "args": [{"node": "x"}, 2], "kwargs": {}},
      {"name": "c", "op": "call_function", "target": "aten.cumsum.default",
       "args": [{"node": "a"}, 0], "kwargs": {}},
      {"name": "d", "op": "call_function", "target": "aten.add.Scalar",
       "args": [{"node": "c"}, 1], "kwargs": {}},
      {"name": "w", "op": "call_method", "target": "add_", "args": [{"node": "x"}, {"node": "d"}],
       "kwargs": {}},
      {"name": "output", "op": "output", "target": "output", "args": [{"node": "d"}],
       "kwargs": {}}]})",
                                "test");
}

TEST(CudaHostSteps, AnOpWithoutACudaKernelRunsOnTheHostAndEqualsTheCpu) {
  IP_REQUIRE_CUDA();
  auto g = scan_and_write();
  const Tensor x0 = random_tensor({6, 4}, DType::kFloat32, 3);
  CompileOptions o;
  o.device = Device::cuda();
  for (bool alias : {true, false}) {
    SCOPED_TRACE(alias ? "aliased" : "copy-back");
    o.alias = alias;
    ::testing::internal::CaptureStderr();
    CompiledProgram gpu = compile(*g, {x0}, o);
    const std::string warning = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(warning.find("node 'c': op 'cumsum' has no kernel for device 'cuda:0'; runs on the "
                           "host, moving 192 bytes per call"),
              std::string::npos)
        << warning;
    ASSERT_EQ(gpu.engine->host_steps().size(), 1u);
    CompileOptions co;
    co.alias = alias;
    CompiledProgram cpu = compile(*g, {x0}, co);
    for (const char* graph : {"on", "off"}) {
      SCOPED_TRACE(graph);
      Tensor xc = x0.clone(), xg = x0.to_device(Device::cuda());
      const void* where = xg.data_ptr();
      ExecutionContext cc(cpu.engine), gc(gpu.engine);
      EXPECT_TRUE(apply_backend_options(gc, {{"cuda_graph", graph}}).empty());
      cc.bind_input(0, xc);
      gc.bind_input(0, xg);
      for (int call = 0; call < 4; ++call) {
        const Tensor want = cc.execute()[0].clone();
        const Tensor got = gc.execute()[0].to_device(Device::cpu());
        EXPECT_TRUE(tensor_equal(got, want)) << "call " << call;
        EXPECT_TRUE(tensor_equal(xg.to_device(Device::cpu()), xc)) << "call " << call;
      }
      EXPECT_EQ(xg.data_ptr(), where);
      const ContextStats st = gc.stats();
      EXPECT_EQ(st.counter("host_steps"), 1);
      EXPECT_EQ(st.counter("graph_captures"), 0);
      EXPECT_EQ(st.counter("graph_replays"), 0);
      EXPECT_EQ(st.counter("graph_off_for_host_steps"), std::string(graph) == "on" ? 1 : 0);
      EXPECT_EQ(st.counter("scalars_on_device"), 0);
    }
  }
  o.strict_device = true;
  EXPECT_TRUE(mentions(error_of([&] { compile(*g, {x0}, o); }),
                       {"node 'c': op 'cumsum' has no kernel for device 'cuda:0'"}));
}

// With the GPU's own pipeline: the decoders Hugging Face exports need no step on the host.
TEST(CudaHostSteps, HuggingFaceFixturesRunWhollyOnTheDevice) {
  IP_REQUIRE_CUDA();
  for (const char* model :
       {"llama", "qwen2", "gpt2", "qwen3", "qwen3_bf16", "gemma3", "gemma3_bf16"}) {
    SCOPED_TRACE(model);
    auto g = read_graph_json(std::string(INPLACE_SOURCE_DIR) + "/tests/frontend/fixtures/hf/" +
                             model + ".json");
    std::vector<Tensor> inputs;
    for (Node* n : g->placeholders())
      inputs.push_back(Tensor::zeros(*n->meta.shape, *n->meta.dtype));
    CompileOptions o;
    o.device = Device::cuda();
    std::string ops;
    for (const HostStep& h : compile(*g, inputs, o).engine->host_steps()) ops += " " + h.op;
    EXPECT_EQ(ops, "") << "ops of " << model << " on the host:" << ops;
  }
}

}  // namespace
