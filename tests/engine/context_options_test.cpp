// One plumbing of backend options and counters for every surface that runs an engine: an option
// the context's backend takes is set (its value checked by the backend), one it does not take is
// left out and returned (cuda_graph on a cpu engine), while set_backend_option itself refuses
// it; the counters read as one map and one line.
#include <gtest/gtest.h>

#include "compiler/compile.h"
#include "engine/context_options.h"
#include "ir/builder.h"
#include "test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

std::shared_ptr<const Engine> doubling() {
  GraphBuilder b("g");
  Node* x = b.placeholder("x");
  b.set_meta(x, {3}, DType::kFloat32);
  b.output(b.call_function("_operator.mul", {x, 2}));
  std::unique_ptr<Graph> g = b.build();
  return compile(*g, {Tensor::zeros({3}, DType::kFloat32)}).engine;
}

TEST(ContextOptions, ACpuEngineLeavesOutTheCudaGraphSwitch) {
  ExecutionContext ctx(doubling());
  EXPECT_EQ(backend_option_keys(Device::cpu()), std::vector<std::string>{"threads"});
  EXPECT_EQ(apply_backend_options(ctx, {{"cuda_graph", "off"}}),
            std::vector<std::string>{"cuda_graph"});
  EXPECT_EQ(apply_backend_options(ctx, {}), std::vector<std::string>{});
  // Asked of the context directly, the cpu backend refuses what it does not take.
  EXPECT_TRUE(mentions(error_of([&] { ctx.set_backend_option("cuda_graph", "off"); }),
                       {"[cpu] unknown backend option 'cuda_graph'", "takes none"}));
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3});
  ctx.bind_input(0, x);
  ctx.execute();
  ctx.execute();
  const ContextStats st = ctx.stats();
  EXPECT_EQ(stats_line(st), "calls=2 host_scalar_reads=0 staged_inputs=0");
  EXPECT_EQ(
      stats_map(st),
      (std::map<std::string, int64_t>{
          {"calls", 2}, {"host_scalar_reads", 0}, {"prepared_inputs", 0}, {"staged_inputs", 0}}));
}

TEST(ContextOptions, EveryContextTakesThreads) {
  ExecutionContext ctx(doubling());
  EXPECT_EQ(ctx.threads(), 1);
  EXPECT_EQ(apply_backend_options(ctx, {{"threads", "3"}}), std::vector<std::string>{});
  EXPECT_EQ(ctx.threads(), 3);
  for (const char* bad : {"0", "-1", "two", "3x", "", "5000"})
    EXPECT_TRUE(mentions(error_of([&] {
                           apply_backend_options(ctx, {{"threads", bad}});
                         }),
                         {"threads takes a thread count from 1 to 1024", bad}))
        << bad;
  EXPECT_EQ(ctx.threads(), 3) << "a refused count leaves the pool";
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3});
  ctx.bind_input(0, x);
  std::vector<Tensor> out = ctx.execute();
  EXPECT_TRUE(tensor_equal(out[0], Tensor::from_vector<float>({2, 4, 6}, {3}), 0));
  EXPECT_EQ(apply_backend_options(ctx, {{"threads", "1"}}), std::vector<std::string>{});
  EXPECT_EQ(ctx.threads(), 1);
}

#ifdef INPLACE_WITH_CUDA
TEST(ContextOptions, TheCudaBackendTakesTheGraphSwitch) {
  EXPECT_EQ(backend_option_keys(Device::cuda()),
            (std::vector<std::string>{"threads", "cuda_graph"}));
}
#endif

}  // namespace
