// The half GEMV's LayerNorm and GELU forms on the GPU (gemv_half_layer.cu): rms_norm_linear with
// norm="layer" (GPT-2's ln_1, ln_2 and ln_f before the linears over its prepared Conv1D weights)
// and the gelu_new epilogue program of fused_linear and rms_norm_linear (c_fc's GELU), against the
// cpu kernels (the chain's kernels): bf16 and fp16, one and three rows, the column kernel, the
// stream kernel (a product of more than 10 MB, k 2048) and the generic one (k not a multiple of
// 8), with and without the norm's bias. The epilogue equals the fused_pointwise kernel on the
// product bit for bit. Then GPT-2 in bf16 (tests/frontend/fixtures/hf) compiled for CUDA with its
// weights prepared, against the cpu engine and bitwise against the same engine run one step a
// launch, positions across the cache. Skipped, saying so, without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "compiler/compile.h"
#include "compiler/hf_fixtures.h"
#include "compiler/rewrite_differential.h"
#include "cuda_test_util.h"
#include "engine/execution_context.h"
#include "epilogue_programs.h"
#include "ops/registry.h"
#include "run_op.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

Value T(const Tensor& t) {
  return Value::from_tensor(t);
}

Tensor run_on(DeviceType device, const char* op, const std::vector<Value>& args) {
  return run_op_on(device, op, args);
}

// rms_norm_linear(x, nw, eps, w, b, norm="layer", norm_bias=nb, epilogue=program).
std::vector<Value> layer_form(const Tensor& x, const Tensor& nw, const Value& nb, const Tensor& w,
                              const Value& b, const Value& program) {
  return {T(x),
          T(nw),
          Value::floating(1e-5),
          T(w),
          b,
          Value::none(),
          Value::none(),
          Value::integer(0),
          Value::string("layer"),
          Value::list({}),
          Value::list({}),
          nb,
          program};
}

TEST(CudaLayerNormLinear, MatchesTheCpuKernels) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 5200;
  struct Shape2 {
    int64_t k, n;
  };
  // The column kernel, the stream kernel (k * n * 2 bytes > 10 MB, k at least 2048) and the
  // generic one (k % 8).
  const Shape2 shapes[] = {{64, 96}, {1024, 3072}, {2048, 2600}, {37, 40}};
  for (DType dt : {DType::kBFloat16, DType::kFloat16})
    for (const Shape2& sh : shapes)
      for (int64_t rows : {1, 3})
        for (bool biases : {true, false})
          for (bool gelu : {false, true}) {
            SCOPED_TRACE(str_cat(dtype_name(dt), " k ", sh.k, " n ", sh.n, " rows ", rows,
                                 biases ? " biases" : "", gelu ? " gelu" : ""));
            const Tensor x = random_tensor({1, rows, sh.k}, dt, seed++);
            const Tensor w = random_tensor({sh.n, sh.k}, dt, seed++);
            const Tensor nw = random_tensor({sh.k}, dt, seed++);
            const Value b = biases ? T(random_tensor({sh.n}, dt, seed++)) : Value::none();
            const Value nb = biases ? T(random_tensor({sh.k}, dt, seed++)) : Value::none();
            const Value program = gelu ? Value::int_list(gelu_tanh(dt)) : Value::list({});
            const std::vector<Value> args = layer_form(x, nw, nb, w, b, program);
            const double tol = dtype_tolerance(dt);
            const Tensor got = run_on(DeviceType::kCuda, "inplace.rms_norm_linear", args);
            EXPECT_TRUE(close(got, run_on(DeviceType::kCpu, "inplace.rms_norm_linear", args), tol));
            EXPECT_TRUE(close(got, run_on(DeviceType::kCuda, "inplace.rms_norm_linear", args), 0))
                << "a second call";
            if (!gelu) continue;
            // The epilogue is the fused_pointwise kernel on the product, bit for bit.
            const Tensor product = run_on(DeviceType::kCuda, "inplace.rms_norm_linear",
                                          layer_form(x, nw, nb, w, b, Value::list({})));
            const Tensor want = run_on(DeviceType::kCuda, "inplace.fused_pointwise",
                                       {Value::list({T(product)}), program});
            EXPECT_TRUE(close(got, want, 0)) << "the epilogue against fused_pointwise";
            // fused_linear's epilogue (no norm): against the cpu.
            const std::vector<Value> plain{
                T(x), T(w), b, Value::none(), Value::list({}), Value::list({}), program};
            EXPECT_TRUE(close(run_on(DeviceType::kCuda, "inplace.fused_linear", plain),
                              run_on(DeviceType::kCpu, "inplace.fused_linear", plain), tol));
          }
}

// The kernels refuse what they do not run, so the passes keep the chain: an epilogue program
// that is not gelu_new, one at float32, one with a residual, a LayerNorm at float32.
TEST(CudaLayerNormLinear, RefusesOtherForms) {
  IP_REQUIRE_CUDA();
  const Tensor x = random_tensor({1, 1, 64}, DType::kBFloat16, 1);
  const Tensor w = random_tensor({96, 64}, DType::kBFloat16, 2);
  const Tensor r = random_tensor({1, 1, 96}, DType::kBFloat16, 3);
  auto why = [](const char* op, const std::vector<Value>& args) {
    ResolvedCall call = resolve_call(op, args, {}, "test");
    const Supports* supports = KernelTable::get().supports(*call.op, DeviceType::kCuda);
    return supports ? (*supports)(call.args) : std::string();
  };
  std::vector<int64_t> other = gelu_tanh(DType::kBFloat16);
  std::vector<int64_t> relu = pointwise::encode(
      {instr(pointwise::Opcode::kLoad, DType::kBFloat16),
       instr(pointwise::Opcode::kUnary, DType::kBFloat16, 0, static_cast<int32_t>(UnaryOp::kRelu)),
       instr(pointwise::Opcode::kStore, DType::kBFloat16, 1)});
  EXPECT_NE(why("inplace.fused_linear", {T(x), T(w), Value::none(), Value::none(), Value::list({}),
                                         Value::list({}), Value::int_list(relu)}),
            "");
  EXPECT_NE(why("inplace.fused_linear", {T(x), T(w), Value::none(), T(r), Value::list({}),
                                         Value::list({}), Value::int_list(other)}),
            "");
  const Tensor xf = random_tensor({1, 1, 64}, DType::kFloat32, 4);
  const Tensor nwf = random_tensor({64}, DType::kFloat32, 5);
  EXPECT_NE(why("inplace.rms_norm_linear",
                layer_form(xf, nwf, Value::none(), w, Value::none(), Value::list({}))),
            "");
}

// GPT-2 in bf16 with its Conv1D weights prepared: ln_1, ln_2 and ln_f join their linears and the
// GELU c_fc's, and the engine matches the cpu's, and itself one step a launch bit for bit.
TEST(CudaLayerNormLinear, PreparedGpt2MatchesTheCpuEngine) {
  IP_REQUIRE_CUDA();
  auto g = hf_fixture("gpt2_bf16");
  std::vector<std::vector<Tensor>> draws;
  for (uint32_t s : {0u, 1u, 17u, 46u, 63u}) draws.push_back(seeded_hf_inputs(*g, s, 64));
  CompileOptions o;
  o.device = Device::cuda();
  o.prepare_weights = true;
  const CompiledProgram gpu = compile(*g, draws[1], o);
  const std::string plan = gpu.engine->describe();
  EXPECT_EQ(count_of(plan, "= layer_norm("), 0) << plan;
  EXPECT_EQ(count_of(plan, "= rms_norm_linear("), 5) << plan;
  EXPECT_EQ(count_of(plan, "= fused_pointwise("), 0) << plan;
  EXPECT_EQ(count_of(plan, "= fused_addmm("), 0) << plan;
  ExecutionContext ctx(gpu.engine);
  setenv("INPLACE_PROFILE", "1", 1);
  ExecutionContext steps(gpu.engine);
  unsetenv("INPLACE_PROFILE");
  const size_t n_in = gpu.engine->inputs().size();
  std::vector<Tensor> inputs, step_inputs;
  for (size_t i = 0; i < n_in; ++i) {
    inputs.push_back(draws[0][i].to_device(Device::cuda()));
    ctx.bind_input(static_cast<int>(i), inputs.back());
    step_inputs.push_back(draws[0][i].to_device(Device::cuda()));
    steps.bind_input(static_cast<int>(i), step_inputs.back());
  }
  const CompiledOnce cpu(*g, draws[1], CompileOptions{});
  const double tol = dtype_tolerance(DType::kBFloat16) * 10;
  for (size_t d = 0; d < draws.size(); ++d) {
    SCOPED_TRACE(str_cat("draw ", d));
    for (size_t i = 0; i < n_in; ++i) {  // new weights too: the prepared copies follow
      write_device(inputs[i], draws[d][i]);
      write_device(step_inputs[i], draws[d][i]);
      ctx.input_written(static_cast<int>(i));
      steps.input_written(static_cast<int>(i));
    }
    std::vector<Tensor> got, one_by_one;
    for (const Tensor& t : ctx.execute()) got.push_back(t.to_device(Device::cpu()));
    for (const Tensor& t : steps.execute()) one_by_one.push_back(t.to_device(Device::cpu()));
    for (size_t j = 0; j < got.size(); ++j)
      EXPECT_TRUE(close(got[j], one_by_one[j], 0)) << "output " << j << " one step a launch";
    const EngineCall want = cpu.call(draws[d]);
    ASSERT_EQ(got.size(), want.outputs.size());
    for (size_t j = 0; j < got.size(); ++j)
      EXPECT_TRUE(close(got[j], want.outputs[j], tol)) << "output " << j;
    for (size_t i = 0; i < n_in; ++i)
      EXPECT_TRUE(close(inputs[i].to_device(Device::cpu()), want.inputs[i], tol)) << "input " << i;
  }
  std::printf("[gpu suite] gpt2_bf16 prepared: %d norm-form products, %lld prepared copies\n",
              count_of(plan, "= rms_norm_linear("),
              (long long)ctx.stats().counter("prepared_inputs"));
}

}  // namespace
