// The gated MLP's activations on the GPU (gate_act.cuh in gemv_bf16's and gemv_half's epilogue):
// gated_mlp and rms_norm_gated_mlp with silu and gelu_tanh, their weights the two row halves of
// one weight (Phi-3's gate_up_proj, read where it lies at an offset), against the cpu kernels;
// and the Hugging Face fixtures that reach them (Phi-3 in bf16: its gate_up halves and its q/k/v
// product's rotary epilogue and cache writes; Gemma's GeGLU and its norms' 1 + w, which the norm
// forms compute: norm="upcast_one_plus_weight"; Qwen2's q/k/v product with its three biases, one
// grouped product a layer with its rotary and cache writes) compiled for cuda, against the cpu
// engine and against the cuda engine without the rewrites, on draws with positions across the
// cache. Skipped, saying so, without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "backend/kernel_table.h"
#include "compiler/compile.h"
#include "compiler/hf_fixtures.h"
#include "compiler/rewrite_differential.h"
#include "cuda_fixture_engine.h"
#include "cuda_test_util.h"
#include "engine/execution_context.h"
#include "ops/registry.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

Value T(const Tensor& t) {
  return Value::from_tensor(t);
}

// `target` on `device` (cuda: its arguments uploaded with the same views); its result on the host.
Tensor run_on(DeviceType device, const std::string& target, const std::vector<Value>& args) {
  ResolvedCall call = resolve_call(target, args, {}, "test");
  const Kernel* kernel = KernelTable::get().find(*call.op, device);
  EXPECT_NE(kernel, nullptr);
  const Tensor meta = call.op->infer(call.args)[0];
  const Device where = device == DeviceType::kCuda ? Device::cuda() : Device::cpu();
  std::vector<Tensor> out{Tensor::empty(meta.shape(), meta.dtype(), where)};
  std::vector<Value> a = call.args;
  if (device == DeviceType::kCuda)
    for (Value& v : a)
      if (v.is_tensor()) v = T(to_cuda_view(v.tensor));
  (*kernel)(a, out, KernelContext{});
  return out[0].to_device(Device::cpu());
}

TEST(CudaGatedForms, ActivationsOnTheHalvesOfOneWeightMatchTheCpu) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 4100;
  const Value eps = Value::floating(1e-5);
  for (DType dt : {DType::kFloat32, DType::kBFloat16})
    for (const char* act : {"silu", "gelu_tanh"})
      for (int64_t k : {64, 1024, 37})
        for (int64_t rows : {1, 3}) {
          SCOPED_TRACE(str_cat(dtype_name(dt), " ", act, " k ", k, " rows ", rows));
          const int64_t n = 96;
          const Tensor x = random_tensor({1, rows, k}, dt, seed++);
          const Tensor w = random_tensor({2 * n, k}, DType::kBFloat16, seed++);
          const Tensor gate = w.slice(0, 0, n), up = w.slice(0, n, 2 * n);  // views at offsets
          const double tol = dtype_tolerance(dt);
          const std::vector<Value> args{T(x), T(gate), T(up), Value::string(act)};
          EXPECT_TRUE(close(run_on(DeviceType::kCuda, "inplace.gated_mlp", args),
                            run_on(DeviceType::kCpu, "inplace.gated_mlp", args), tol));
          // The up half first: the gate reads the weight's second half.
          const std::vector<Value> swapped{T(x), T(up), T(gate), Value::string(act)};
          EXPECT_TRUE(close(run_on(DeviceType::kCuda, "inplace.gated_mlp", swapped),
                            run_on(DeviceType::kCpu, "inplace.gated_mlp", swapped), tol));
          const Tensor nw = random_tensor({k}, dt, seed++);
          // At bf16 also Gemma's norm, its weight the model's own (1 + w in the kernel).
          std::vector<const char*> norms{dt == DType::kFloat32 ? "rms_norm" : "upcast"};
          if (dt != DType::kFloat32) norms.push_back("upcast_one_plus_weight");
          for (const char* norm : norms) {
            SCOPED_TRACE(norm);
            const std::vector<Value> normed{
                T(x), T(nw), eps, T(gate), T(up), Value::string(act), Value::string(norm)};
            EXPECT_TRUE(close(run_on(DeviceType::kCuda, "inplace.rms_norm_gated_mlp", normed),
                              run_on(DeviceType::kCpu, "inplace.rms_norm_gated_mlp", normed), tol));
          }
        }
}

TEST(CudaGatedForms, Phi3GemmaAndQwen2FixturesMatchTheCpuEngine) {
  IP_REQUIRE_CUDA();
  struct Case {
    const char* model;
    const char* gated;
    int grouped;  // q/k/v products that are one grouped product (merge_sibling_linears)
  };
  for (const Case& c : {Case{"phi3_bf16", "_swiglu_normed = rms_norm_gated_mlp(", 0},
                        Case{"gemma_bf16", "_geglu_normed = rms_norm_gated_mlp(", 2},
                        Case{"qwen2_bf16", "= rms_norm_gated_mlp(", 2}}) {
    SCOPED_TRACE(c.model);
    auto g = hf_fixture(c.model);
    std::vector<std::vector<Tensor>> draws;
    for (uint32_t s : {0u, 1u, 31u, 46u, 63u}) draws.push_back(seeded_hf_inputs(*g, s, 64));
    FixtureEngine gpu(*g, draws[0], Device::cuda()), cpu(*g, draws[0], Device::cpu());
    FixtureEngine apart(*g, draws[0], Device::cuda(),
                        {"fuse_linear_epilogues", "fuse_rotary_epilogues"});
    EXPECT_EQ(count_of(gpu.plan(), c.gated), 2) << gpu.plan();
    EXPECT_EQ(count_of(gpu.plan(), "= rotary_embedding("), 0) << gpu.plan();
    EXPECT_EQ(count_of(gpu.plan(), "_merged_normed = rms_norm_linear("), c.grouped) << gpu.plan();
    // No norm weight is computed by a step of its own: Gemma's 1 + w joins its norm form.
    EXPECT_EQ(lines_with(gpu.plan(), "= fused_pointwise(", "[64]:float32"), 0) << gpu.plan();
    for (size_t d = 0; d < draws.size(); ++d) {
      SCOPED_TRACE(str_cat("draw ", d));
      const std::vector<Tensor> a = gpu.call(draws[d]), b = cpu.call(draws[d]),
                                n = apart.call(draws[d]);
      ASSERT_EQ(a.size(), b.size());
      for (size_t j = 0; j < a.size(); ++j) {
        EXPECT_TRUE(close(a[j], b[j], dtype_tolerance(a[j].dtype()))) << "value " << j;
        EXPECT_TRUE(close(a[j], n[j], dtype_tolerance(a[j].dtype()))) << "value " << j;
      }
    }
    // Each layer's k and v cache writes ran in its q/k/v product's launch, as Llama's do.
    EXPECT_GE(gpu.context().stats().counter("joined_steps"), 4);
    std::printf("[gpu suite] %s fixture: %lld steps joined to another's launch\n", c.model,
                (long long)gpu.context().stats().counter("joined_steps"));
  }
}

#ifdef INPLACE_WITH_CUDA
// Both activations are the kernels' to run (no GPU needed).
TEST(CudaGatedForms, SupportsBothActivations) {
  const OpDef& op = *Registry::get().find("gated_mlp");
  const Supports* supports = KernelTable::get().supports(op, DeviceType::kCuda);
  ASSERT_NE(supports, nullptr);
  const Tensor x = random_tensor({1, 1, 16}, DType::kBFloat16, 1);
  const Tensor w = random_tensor({16, 16}, DType::kBFloat16, 2);
  for (const char* act : {"silu", "gelu_tanh"})
    EXPECT_EQ((*supports)({T(x), T(w.slice(0, 0, 8)), T(w.slice(0, 8, 16)), Value::string(act)}),
              "")
        << act;
}

// Gemma's norm form (the model's own weight, of the input's dtype or float32) is the half GEMV's
// to run (no GPU needed).
TEST(CudaGatedForms, SupportsGemmasNormWeight) {
  const Tensor x = random_tensor({1, 1, 16}, DType::kBFloat16, 1);
  const Tensor w = random_tensor({8, 16}, DType::kBFloat16, 2);
  const Value eps = Value::floating(1e-6), form = Value::string("upcast_one_plus_weight"),
              none = Value::none();
  for (DType nw_dt : {DType::kBFloat16, DType::kFloat32}) {
    SCOPED_TRACE(dtype_name(nw_dt));
    const Tensor nw = random_tensor({16}, nw_dt, 3);
    const Supports* linear =
        KernelTable::get().supports(*Registry::get().find("rms_norm_linear"), DeviceType::kCuda);
    const Supports* gated =
        KernelTable::get().supports(*Registry::get().find("rms_norm_gated_mlp"), DeviceType::kCuda);
    ASSERT_TRUE(linear && gated);
    EXPECT_EQ((*linear)({T(x), T(nw), eps, T(w), none, none, none, Value::integer(0), form}), "");
    EXPECT_EQ((*gated)({T(x), T(nw), eps, T(w), T(w), Value::string("gelu_tanh"), form}), "");
  }
}
#endif

}  // namespace
