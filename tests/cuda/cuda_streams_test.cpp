// Contexts on streams (GPU suite): contexts of one engine on one host thread whose calls run at
// the same time on different streams stay independent. Each owns its device scratch: the
// general attention path (a mask, several splits of the keys) leaves its split partials, and
// cuBLAS its workspace (a long product, split along k), in the context's workspace, not in
// memory shared by the host thread. And one context's calls on alternating streams run in order.
// Skipped without a GPU.
#include <gtest/gtest.h>

#include "compiler/differential.h"
#include "cuda_test_util.h"
#include "ir/builder.h"
#include "kernels/cuda/device_runtime.h"

#ifdef INPLACE_WITH_CUDA  // the streams come from the backend's runtime
using namespace inplace;
using namespace inplace::testing;

namespace {

TEST(CudaStreams, ContextsOfOneThreadOnTheirOwnStreamsKeepTheirScratch) {
  IP_REQUIRE_CUDA();
  GraphBuilder b("masked_attention");
  Node* q = b.placeholder("q");
  Node* k = b.placeholder("k");
  Node* v = b.placeholder("v");
  Node* mask = b.placeholder("mask");
  Node* x = b.placeholder("x");
  Node* w = b.placeholder("w");
  b.output(arg::tuple(
      {b.call_function("torch.nn.functional.scaled_dot_product_attention", {q, k, v, mask}),
       b.call_function("torch.matmul", {x, w})}));
  auto g = b.build();
  // 32 query rows over 2048 keys: the general path, split along the keys (scratch needed).
  auto inputs = [](uint32_t seed) {
    return std::vector<Tensor>{random_tensor({1, 4, 8, 64}, DType::kFloat32, seed),
                               random_tensor({1, 4, 2048, 64}, DType::kFloat32, seed + 1),
                               random_tensor({1, 4, 2048, 64}, DType::kFloat32, seed + 2),
                               random_tensor({1, 1, 8, 2048}, DType::kFloat32, seed + 3),
                               random_tensor({64, 16384}, DType::kFloat32, seed + 4),
                               random_tensor({16384, 64}, DType::kFloat32, seed + 5)};
  };
  CompileOptions o;
  o.device = Device::cuda();
  const CompiledProgram cp = compile(*g, inputs(1), o);
  const cuda::DeviceRuntime* runtime = &cuda::device_runtime();
  constexpr int kContexts = 3;
  std::vector<std::vector<Tensor>> host, dev;
  std::vector<std::unique_ptr<ExecutionContext>> ctx;
  std::vector<void*> streams;
  std::vector<EagerRun> want;
  for (int c = 0; c < kContexts; ++c) {
    host.push_back(inputs(10 * c + 5));
    want.push_back(run_reference(*g, host.back()));
    dev.emplace_back();
    for (const Tensor& t : host.back()) dev.back().push_back(t.to_device(Device::cuda()));
    ctx.push_back(std::make_unique<ExecutionContext>(cp.engine));
    for (int i = 0; i < 6; ++i) ctx.back()->bind_input(i, dev.back()[i]);
    streams.push_back(runtime->create_stream());
  }
  // Every round enqueues each context's call on its own stream before waiting for any.
  for (bool graphs : {false, true}) {
    for (auto& c : ctx) c->set_backend_option("cuda_graph", graphs ? "on" : "off");
    for (int round = 0; round < 4; ++round) {
      std::vector<std::vector<Tensor>> outs;
      for (int c = 0; c < kContexts; ++c) outs.push_back(ctx[c]->execute(streams[c]));
      for (int c = 0; c < kContexts; ++c) {
        ctx[c]->synchronize();
        EXPECT_TRUE(close(outs[c][0].to_device(Device::cpu()), want[c].outputs[0], 1e-4))
            << "attention, context " << c << ", round " << round << (graphs ? ", graphs on" : "");
        EXPECT_TRUE(close(outs[c][1].to_device(Device::cpu()), want[c].outputs[1], 1e-4))
            << "matmul, context " << c << ", round " << round << (graphs ? ", graphs on" : "");
      }
    }
  }
  ctx.clear();
  for (void* s : streams) runtime->destroy_stream(s);
}

}  // namespace

namespace {

// One context whose calls alternate between two streams with no wait between them: each call
// adds 1 to a large bound tensor in place (aliased), so a call that started before the previous
// one finished would lose updates. The context orders a call on a new stream after the last
// call's work.
TEST(CudaStreams, OneContextsCallsOnAlternatingStreamsRunInOrder) {
  IP_REQUIRE_CUDA();
  GraphBuilder b("add_one");
  Node* x = b.placeholder("x");
  b.call_method("add_", {x, 1.0});
  b.output(arg::tuple({b.call_function("torch.sum", {x})}));
  auto g = b.build();
  const int64_t n = int64_t{1} << 26;  // 256 MB: a call takes tens of microseconds
  CompileOptions o;
  o.device = Device::cuda();
  const CompiledProgram cp = compile(*g, {Tensor::meta({n}, DType::kFloat32)}, o);
  Tensor xd = Tensor::zeros({n}, DType::kFloat32).to_device(Device::cuda());
  const cuda::DeviceRuntime* runtime = &cuda::device_runtime();
  void* streams[2] = {runtime->create_stream(), runtime->create_stream()};
  for (bool graphs : {false, true}) {
    ExecutionContext ctx(cp.engine);
    ctx.set_backend_option("cuda_graph", graphs ? "on" : "off");
    ctx.bind_input(0, xd);
    const int kCalls = 12;
    for (int i = 0; i < kCalls; ++i) ctx.execute(streams[i % 2]);
    ctx.synchronize();
    const Tensor got = xd.to_device(Device::cpu());
    const float want = graphs ? 2.f * kCalls : 1.f * kCalls;  // the first pass left 12
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) wrong += got.data<float>()[i] != want;
    EXPECT_EQ(wrong, 0) << (graphs ? "graphs on" : "graphs off");
  }
  for (void* s : streams) runtime->destroy_stream(s);
}

}  // namespace

#endif  // INPLACE_WITH_CUDA
