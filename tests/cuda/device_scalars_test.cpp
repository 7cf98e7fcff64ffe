// Which engines evaluate their runtime scalars on the device (kernels/cuda/device_scalars.h; built
// with the CUDA backend only): decided from the plan alone, so it is tested here on cpu plans seen
// as if built for a GPU.
#include <gtest/gtest.h>

#include "compiler/compile.h"
#include "ir/builder.h"
#include "kernels/cuda/device_scalars.h"
#include "models/llama.h"

#ifdef INPLACE_WITH_CUDA
using namespace inplace;

namespace {

Plan as_if_on_gpu(const Engine& e) {
  Plan p = e.plan();
  p.device = Device::cuda();
  return p;
}

TEST(DeviceScalars, LlamaDecodeAndPrefillReadTheirKeyCountOnTheDevice) {
  const auto c = models::llama_config("tiny", 32, 1);
  const auto w = models::llama_weights(c);
  for (int64_t tokens : {1, 4}) {
    auto g = tokens == 1 ? models::llama_decode_graph(c, w) : models::llama_prefill_graph(c, w);
    auto cp = compile(*g, models::llama_example_inputs(c, tokens));
    const Plan plan = as_if_on_gpu(*cp.engine);
    const cuda::DeviceScalarPlan d = cuda::plan_device_scalars(plan);
    ASSERT_TRUE(d.on_device) << d.why_not;
    int attention = 0;
    for (size_t q = 0; q < plan.steps.size(); ++q)
      if (d.step_extent[q] >= 0) {
        ++attention;
        EXPECT_EQ(plan.steps[q].op->schema.name, "scaled_dot_product_attention");
      }
    EXPECT_EQ(attention, c.n_layers);
    EXPECT_FALSE(d.prefix_ends.empty());
    EXPECT_EQ(d.code[0], static_cast<int64_t>(plan.scalars.size()));
  }
}

TEST(DeviceScalars, ASelectAtAPositionKeepsTheHostPath) {
  GraphBuilder b("select_at");
  Node* x = b.placeholder("x");
  Node* pos = b.placeholder("pos");
  Node* p0 = b.call_function("_operator.getitem", {pos, 0});
  Node* row = b.call_function("torch.select", {x, 0, p0});
  b.output(arg::tuple({b.call_function("_operator.mul", {row, 2})}));
  auto g = b.build();
  Tensor xs = Tensor::zeros({4, 3}, DType::kFloat32);
  Tensor ps = Tensor::zeros({1}, DType::kInt64);
  auto cp = compile(*g, {xs, ps});
  const cuda::DeviceScalarPlan d = cuda::plan_device_scalars(as_if_on_gpu(*cp.engine));
  EXPECT_FALSE(d.on_device);
  EXPECT_NE(d.why_not.find("runtime int"), std::string::npos) << d.why_not;
  EXPECT_FALSE(cuda::plan_device_scalars(cp.engine->plan()).on_device);  // a cpu engine
}

}  // namespace

#endif  // INPLACE_WITH_CUDA
