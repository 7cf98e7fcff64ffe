// fused_pointwise on CUDA against the cpu eager interpreter: elementwise chains (an RMSNorm tail
// at bfloat16, SiLU(gate) * up at float16, arithmetic with casts and numbers at float32, a mask
// by comparison and where, integer arithmetic) compiled for cuda, where fuse_pointwise makes one
// step of each; the results within the dtype's tolerance. Skipped, saying so, without a GPU.
#include <gtest/gtest.h>

#include <functional>

#include "compiler/differential.h"
#include "cuda_test_util.h"
#include "ir/builder.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

using Call = std::function<Node*(const char*, std::vector<Arg>)>;

std::unique_ptr<Graph> chain(DType t, const std::function<Node*(Call, Node*, Node*)>& body) {
  GraphBuilder b("chain");
  Node* x = b.set_meta(b.placeholder("x"), {3, 5, 64}, t);
  Node* y = b.set_meta(b.placeholder("y"), {64}, t);
  Call call = [&](const char* target, std::vector<Arg> a) {
    return b.call_function(target, std::move(a));
  };
  b.output(arg::tuple({body(call, x, y)}));
  return b.build();
}

void expect_cuda_matches_cpu(const Graph& g, DType t, double tol) {
  std::vector<Tensor> inputs;
  for (Node* p : g.placeholders())
    inputs.push_back(random_tensor(*p->meta.shape, t, static_cast<uint32_t>(inputs.size() + 3)));
  const EagerRun ref = run_reference(g, inputs);
  CompileOptions o;
  o.device = Device::cuda();
  CompiledProgram cp = compile(g, inputs, o);
  EXPECT_NE(cp.engine->describe().find("fused_pointwise"), std::string::npos)
      << cp.engine->describe();
  std::vector<Tensor> dev;
  for (const Tensor& x : inputs) dev.push_back(x.to_device(Device::cuda()));
  ExecutionContext ctx(cp.engine);
  for (int i = 0; i < cp.num_user_inputs; ++i) ctx.bind_input(i, dev[i]);
  std::vector<Tensor> outs = ctx.execute();
  ASSERT_EQ(outs.size(), ref.outputs.size());
  for (size_t j = 0; j < outs.size(); ++j)
    EXPECT_TRUE(close(outs[j].to_device(Device::cpu()), ref.outputs[j], tol)) << "output " << j;
}

TEST(CudaFusedPointwise, ChainsEqualTheCpu) {
  IP_REQUIRE_CUDA();
  // (x.f32 * rsqrt(x.f32 * x.f32 + eps)).to(bf16) * w
  expect_cuda_matches_cpu(
      *chain(DType::kBFloat16,
             [](Call c, Node* x, Node* w) {
               Node* up = c("aten.to.dtype", {x, DType::kFloat32});
               Node* r = c("aten.rsqrt.default",
                           {c("aten.add.Tensor", {c("aten.mul.Tensor", {up, up}), 1e-6})});
               Node* d = c("aten.to.dtype", {c("aten.mul.Tensor", {up, r}), DType::kBFloat16});
               return c("aten.mul.Tensor", {w, d});
             }),
      DType::kBFloat16, dtype_tolerance(DType::kBFloat16));
  for (DType t : {DType::kFloat16, DType::kFloat32})
    expect_cuda_matches_cpu(*chain(t,
                                   [](Call c, Node* g, Node* u) {
                                     return c("aten.mul.Tensor", {c("aten.silu.default", {g}), u});
                                   }),
                            t, dtype_tolerance(t));
  expect_cuda_matches_cpu(
      *chain(DType::kFloat32,
             [](Call c, Node* x, Node* y) {
               Node* m = c("aten.lt.Tensor", {x, y});
               Node* s = c("aten.div.Tensor", {c("aten.pow.Tensor_Scalar", {x, 2}), 3});
               return c("aten.where.self", {m, s, c("aten.neg.default", {y})});
             }),
      DType::kFloat32, 1e-5);
  expect_cuda_matches_cpu(*chain(DType::kInt64,
                                 [](Call c, Node* x, Node* y) {
                                   return c("aten.mul.Tensor", {c("aten.add.Tensor", {x, y}), 3});
                                 }),
                          DType::kInt64, 0);
}

}  // namespace
