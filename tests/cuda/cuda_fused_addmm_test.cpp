// fused_addmm on the GPU (gemv_in_out.cu: the product over a weight stored [in, out], read where
// it lies) against the cpu kernel (the chain's kernels): float32, bfloat16 and float16, one to
// six rows, GPT-2's shapes and odd ones, the one-row kernel (k split across a cluster), the
// 16-byte path and the scalar one (n not a multiple of a 16-byte chunk, or a weight not 16-byte
// aligned), with and without bias, residual and the LayerNorm prologue, each call's bits alike.
// Then GPT-2 (tests/frontend/fixtures/hf, float32 and bf16) compiled for CUDA, whose Conv1D
// products are fused_addmm steps (c_attn's with the k and v cache writes in its epilogue), against
// the cpu engine and bitwise against the same engine run one step a launch: every output and every
// cache, positions across the cache. Skipped, saying so, without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>

#include "compiler/compile.h"
#include "compiler/hf_fixtures.h"
#include "compiler/rewrite_differential.h"
#include "cuda_test_util.h"
#include "engine/execution_context.h"
#include "epilogue_programs.h"
#include "ops/fused_pointwise_args.h"
#include "ops/registry.h"
#include "run_op.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

Value T(const Tensor& t) {
  return Value::from_tensor(t);
}

// fused_addmm (or `op`) on `device`, back on the cpu.
Tensor run_on(DeviceType device, const std::vector<Value>& args,
              const char* op = "inplace.fused_addmm") {
  return run_op_on(device, op, args);
}

// A contiguous copy of w whose data starts one element past a 16-byte boundary.
Tensor misaligned(const Tensor& w) {
  Tensor base = Tensor::empty({w.numel() + 1}, w.dtype());
  Tensor v = base.slice(0, 1, std::nullopt).view(w.shape());
  v.copy_from(w);
  return v;
}

TEST(CudaFusedAddmm, KernelMatchesTheCpuChain) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 2900;
  const Value none = Value::none(), eps = Value::floating(1e-5);
  struct Shape2 {
    int64_t k, n;
  };
  for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
    // GPT-2's (d_model 768 and 1024), odd ones, k split across 8 blocks in shares that are not
    // whole 32-row passes, the last share shorter (1001, 4100 with a partial last tile of columns),
    // and a k whose share would not fit the one-row kernel's stage (16500: the general kernel at
    // one row too).
    for (Shape2 s : {Shape2{64, 192}, Shape2{768, 2304}, Shape2{3072, 768}, Shape2{1024, 3072},
                     Shape2{2816, 1024}, Shape2{1001, 768}, Shape2{4100, 72}, Shape2{16500, 24},
                     Shape2{200, 100}, Shape2{37, 16}})
      for (int64_t rows : {1, 2, 4, 6})
        for (bool aligned : {true, false}) {
          SCOPED_TRACE(str_cat(dtype_name(dt), " k ", s.k, " n ", s.n, " rows ", rows,
                               aligned ? "" : " misaligned"));
          const Tensor x = random_tensor({1, rows, s.k}, dt, seed++);
          Tensor w = random_tensor({s.k, s.n}, dt, seed++);
          if (!aligned) w = misaligned(w);
          const Tensor b = random_tensor({s.n}, dt, seed++);
          const Tensor r = random_tensor({1, rows, s.n}, dt, seed++);
          const Tensor nw = random_tensor({s.k}, dt, seed++), nb = random_tensor({s.k}, dt, seed++);
          // The float32 sum's order is the GPU's: a half result may move by a unit or two.
          const double tol = dtype_tolerance(dt) * (dt == DType::kFloat32 ? 10 : 1);
          for (const std::vector<Value>& args :
               std::vector<std::vector<Value>>{{T(x), T(w)},
                                               {T(x), T(w), T(b)},
                                               {T(x), T(w), T(b), T(r)},
                                               {T(x), T(w), T(b), T(r), eps, T(nw), T(nb)},
                                               {T(x), T(w), T(b), none, eps, T(nw), none},
                                               {T(x), T(w), none, T(r), eps, none, none}}) {
            SCOPED_TRACE(str_cat(args.size(), " arguments"));
            const Tensor got = run_on(DeviceType::kCuda, args);
            EXPECT_TRUE(close(got, run_on(DeviceType::kCpu, args), tol));
            // The split sums meet in a fixed order: the same bits on every call.
            EXPECT_TRUE(close(got, run_on(DeviceType::kCuda, args), 0)) << "a second call";
          }
        }
}

// Every op of the epilogue's activation interpreter at dtype t: relu((silu(x) - sigmoid(x)) /
// (exp(-x) + 1)) * tanh(x).
std::vector<int64_t> activation_mix(DType t) {
  using pointwise::Opcode;
  auto unary = [&](UnaryOp op, int32_t a) {
    return instr(Opcode::kUnary, t, a, static_cast<int32_t>(op));
  };
  auto binary = [&](BinaryOp op, int32_t a, int32_t b) {
    return instr(Opcode::kBinary, t, a, b, static_cast<int32_t>(op));
  };
  int32_t kind, lo, hi;
  pointwise::split_number(Scalar(1.0), &kind, &lo, &hi);
  return pointwise::encode(
      {instr(Opcode::kLoad, t), unary(UnaryOp::kSilu, 0), unary(UnaryOp::kSigmoid, 0),
       binary(BinaryOp::kSub, 1, 2), unary(UnaryOp::kNeg, 0), unary(UnaryOp::kExp, 4),
       instr(Opcode::kConst, t, kind, lo, hi), binary(BinaryOp::kAdd, 5, 6),
       binary(BinaryOp::kDiv, 3, 7), unary(UnaryOp::kRelu, 8), unary(UnaryOp::kTanh, 0),
       binary(BinaryOp::kMul, 9, 10), instr(Opcode::kStore, t, 11)});
}

// tanh computed in a wider dtype and cast back (the epilogue's general interpreter).
std::vector<int64_t> wide_tanh(DType t) {
  using pointwise::Opcode;
  const DType wide = t == DType::kFloat32 ? DType::kFloat64 : DType::kFloat32;
  return pointwise::encode({instr(Opcode::kLoad, t), instr(Opcode::kCast, wide, 0),
                            instr(Opcode::kUnary, wide, 1, static_cast<int32_t>(UnaryOp::kTanh)),
                            instr(Opcode::kCast, t, 2), instr(Opcode::kStore, t, 3)});
}

// The epilogue program computes on the GPU what the fused_pointwise kernel computes on the
// product, bit for bit: the one-row kernel (k split) and the general one (three rows); GPT-2's
// gelu_new (straight-line code, pointwise::match_gelu_new), programs of activation ops (their own
// interpreter), of one dtype and of two.
TEST(CudaFusedAddmm, EpilogueProgramEqualsTheFusedPointwiseKernel) {
  IP_REQUIRE_CUDA();
  uint32_t seed = 3100;
  const Value none = Value::none(), eps = Value::floating(1e-5);
  for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16})
    for (int64_t rows : {1, 3})
      for (int form : {0, 1, 2}) {
        const char* kForm[] = {" gelu_new", " cast to a wider dtype", " every activation op"};
        SCOPED_TRACE(str_cat(dtype_name(dt), " rows ", rows, kForm[form]));
        const int64_t k = 1024, n = 2816;
        const Tensor x = random_tensor({1, rows, k}, dt, seed++);
        const Tensor w = random_tensor({k, n}, dt, seed++), b = random_tensor({n}, dt, seed++);
        const Tensor nw = random_tensor({k}, dt, seed++), nb = random_tensor({k}, dt, seed++);
        const Value program = Value::int_list(form == 0   ? gelu_tanh(dt)
                                              : form == 1 ? wide_tanh(dt)
                                                          : activation_mix(dt));
        const Tensor product =
            run_on(DeviceType::kCuda, {T(x), T(w), T(b), none, eps, T(nw), T(nb)});
        const Tensor want = run_on(DeviceType::kCuda, {Value::list({T(product)}), program},
                                   "inplace.fused_pointwise");
        const Tensor got =
            run_on(DeviceType::kCuda, {T(x), T(w), T(b), none, eps, T(nw), T(nb), program});
        EXPECT_TRUE(close(got, want, 0));
      }
}

TEST(CudaFusedAddmm, Gpt2FixturesMatchTheCpuEngine) {
  IP_REQUIRE_CUDA();
  for (const char* model : {"gpt2", "gpt2_bf16"}) {
    SCOPED_TRACE(model);
    auto g = hf_fixture(model);
    std::vector<std::vector<Tensor>> draws;
    for (uint32_t s : {0u, 1u, 17u, 46u, 63u}) draws.push_back(seeded_hf_inputs(*g, s, 64));
    CompileOptions o;
    o.device = Device::cuda();
    o.prepare_weights = false;  // the weights as they lie: fused_addmm (written between calls)
    const CompiledProgram gpu = compile(*g, draws[1], o);
    const std::string plan = gpu.engine->describe();
    // Each layer: ln_1 + c_attn, c_proj + residual, ln_2 + c_fc, c_proj + residual.
    EXPECT_EQ(count_of(plan, "= fused_addmm("), 8) << plan;
    EXPECT_EQ(count_of(plan, "= layer_norm("), 1) << plan;
    // One context as the engine runs (c_attn's k and v cache writes from its epilogue), one
    // profiled (every step its own launch): bitwise alike.
    ExecutionContext ctx(gpu.engine);
    setenv("INPLACE_PROFILE", "1", 1);
    ExecutionContext steps(gpu.engine);
    unsetenv("INPLACE_PROFILE");
    std::vector<Tensor> inputs, step_inputs;
    for (size_t i = 0; i < draws[0].size(); ++i) {
      inputs.push_back(draws[0][i].to_device(Device::cuda()));
      ctx.bind_input(static_cast<int>(i), inputs.back());
      step_inputs.push_back(draws[0][i].to_device(Device::cuda()));
      steps.bind_input(static_cast<int>(i), step_inputs.back());
    }
    const CompiledOnce cpu(*g, draws[1], CompileOptions{});
    const double tol = dtype_tolerance(*g->placeholders()[0]->meta.dtype) * 10;
    for (size_t d = 0; d < draws.size(); ++d) {
      SCOPED_TRACE(str_cat("draw ", d));
      for (size_t i = 0; i < draws[d].size(); ++i) {
        write_device(inputs[i], draws[d][i]);
        write_device(step_inputs[i], draws[d][i]);
      }
      std::vector<Tensor> got, one_by_one;
      for (const Tensor& t : ctx.execute()) got.push_back(t.to_device(Device::cpu()));
      for (const Tensor& t : steps.execute()) one_by_one.push_back(t.to_device(Device::cpu()));
      for (size_t j = 0; j < got.size(); ++j)
        EXPECT_TRUE(close(got[j], one_by_one[j], 0)) << "output " << j << " one step a launch";
      for (size_t i = 0; i < inputs.size(); ++i)
        EXPECT_TRUE(
            close(inputs[i].to_device(Device::cpu()), step_inputs[i].to_device(Device::cpu()), 0))
            << "input " << i << " one step a launch";
      const EngineCall want = cpu.call(draws[d]);
      ASSERT_EQ(got.size(), want.outputs.size());
      for (size_t j = 0; j < got.size(); ++j)
        EXPECT_TRUE(close(got[j], want.outputs[j], tol)) << "output " << j;
      for (size_t i = 0; i < inputs.size(); ++i)
        EXPECT_TRUE(close(inputs[i].to_device(Device::cpu()), want.inputs[i], tol))
            << "input " << i;
    }
    // Each layer's k and v cache writes join c_attn's launch.
    const ContextStats st = ctx.stats();
    EXPECT_GE(st.counter("joined_steps"), 4);
    std::printf("[gpu suite] %s: %d fused_addmm steps, %lld steps joined to another's launch\n",
                model, count_of(plan, "= fused_addmm("), (long long)st.counter("joined_steps"));
  }
}

}  // namespace
