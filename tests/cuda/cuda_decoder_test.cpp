// The streaming decoder (examples/streaming_decoder, a GPT traced from PyTorch) decoded on
// CUDA: 64 greedy steps through one aliased and one copy-back engine, each compiled once; the
// tokens equal PyTorch's, the logits and final caches are within tolerance of PyTorch's, and
// the aliased engine's caches are the caller's own device memory. Prints the per-step time.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>

#include "compiler/compile.h"
#include "cuda_test_util.h"
#include "engine/execution_context.h"
#include "frontend/graph_json.h"
#include "frontend/safetensors.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

const std::string kDir = INPLACE_SOURCE_DIR "/examples/streaming_decoder/";

// Writes host values into a device tensor's own memory (its address stays the same).
TEST(CudaDecoder, StreamingDecoderMatchesPyTorchOver64Steps) {
  IP_REQUIRE_CUDA();
  auto graph = read_graph_json(kDir + "graph.json");
  std::map<std::string, Tensor> example = read_safetensors(kDir + "inputs.safetensors");
  std::map<std::string, Tensor> ref = read_safetensors(kDir + "reference.safetensors");
  const Tensor& ref_tokens = ref.at("tokens");
  const Tensor& ref_logits = ref.at("logits");
  const int steps = static_cast<int>(ref_tokens.numel());
  std::vector<Node*> ph = graph->placeholders();
  std::vector<Tensor> examples;
  for (Node* n : ph) examples.push_back(example.at(n->name));
  for (bool alias : {true, false}) {
    SCOPED_TRACE(alias ? "aliased" : "copy-back");
    CompileOptions o;
    o.alias = alias;
    o.device = Device::cuda();
    CompiledProgram cp = compile(*graph, examples, o);
    std::map<std::string, Tensor> dev;
    for (Node* n : ph) dev[n->name] = example.at(n->name).to_device(Device::cuda());
    std::map<std::string, const void*> addresses;
    for (const auto& [name, t] : dev) addresses[name] = t.data_ptr();
    ExecutionContext ctx(cp.engine);
    for (int i = 0; i < cp.num_user_inputs; ++i) ctx.bind_input(i, dev.at(ph[i]->name));
    int mismatches = 0;
    double logit_diff = 0;
    std::vector<double> step_us;
    for (int s = 0; s < steps; ++s) {
      write_device(dev.at("pos"), Tensor::scalar(int64_t{s}, DType::kInt64));
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<Tensor> outs = ctx.execute();
      const Tensor token = outs[1].to_device(Device::cpu());  // waits for the step
      step_us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      mismatches += token.item().to_int() != static_cast<int64_t>(ref_tokens.at(s));
      const std::vector<double> got = outs[0].to_device(Device::cpu()).to_double_vector();
      const std::vector<double> want = ref_logits.select(0, s).contiguous().to_double_vector();
      for (size_t i = 0; i < got.size(); ++i)
        logit_diff = std::max(logit_diff, std::fabs(got[i] - want[i]));
      write_device(dev.at("token"), token);
    }
    EXPECT_EQ(mismatches, 0);
    EXPECT_LT(logit_diff, 1e-3);
    for (const Mutation& a : cp.engine->aliased_io()) {
      const std::string& name = cp.engine->inputs()[a.input].name;
      EXPECT_EQ(dev.at(name).data_ptr(), addresses.at(name)) << name;
      if (ref.count(name))
        EXPECT_TRUE(close(dev.at(name).to_device(Device::cpu()), ref.at(name), 1e-3)) << name;
    }
    if (alias) EXPECT_FALSE(cp.engine->aliased_io().empty());
    // The median: the process's first step also loads the CUDA modules and cuBLAS.
    std::sort(step_us.begin(), step_us.end());
    std::printf(
        "[gpu suite] streaming decoder on cuda, %s: %d tokens equal to PyTorch's, max "
        "logit diff %.2g, %.1f us per step (median, including the token read back)\n",
        alias ? "aliased" : "copy-back", steps - mismatches, logit_diff,
        step_us[step_us.size() / 2]);
  }
}

}  // namespace
