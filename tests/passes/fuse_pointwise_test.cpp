// fuse_pointwise: random chains of 2-12 elementwise ops (unary math, arithmetic with tensors and
// Python numbers, pow by a number, casts, comparisons, where / masked_fill) over random
// broadcast shapes and dtypes (float32, bfloat16, float16, int32, int64, bool), compiled with
// and without the pass: the outputs must be bitwise equal, and the fused plan must run fewer
// steps. A malformed program is refused naming the instruction, for any bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "backend/eager_call.h"
#include "backend/kernel_table.h"
#include "compiler/rewrite_differential.h"
#include "engine/host_fallback.h"
#include "ir/builder.h"
#include "ops/elementwise_args.h"
#include "ops/fused_pointwise_args.h"
#include "ops/registry.h"
#include "passes/pointwise_chains.h"
#include "passes/random_chain_check.h"

namespace inplace::testing {
namespace {

TEST(FusePointwise, RandomChainsAreBitwiseTheUnfusedChain) {
  EXPECT_GT(fused_random_chains(
                150, [](uint32_t) { return ChainOptions{}; }, "fused_pointwise"),
            80);
}

TEST(FusePointwise, Bf16NormTailIsOneStepAndExact) {
  // HF's RMSNorm tail at bfloat16: (x.f32 * rsqrt(var + eps)).to(bf16) * w, var from a mean.
  GraphBuilder b("norm_tail");
  Node* x = b.set_meta(b.placeholder("x"), {2, 1, 64}, DType::kBFloat16);
  Node* w = b.set_meta(b.placeholder("w"), {64}, DType::kBFloat16);
  auto call = [&](const char* t, std::vector<Arg> a) { return b.call_function(t, std::move(a)); };
  Node* up = call("aten.to.dtype", {x, DType::kFloat32});
  Node* var =
      call("aten.mean.dim", {call("aten.pow.Tensor_Scalar", {up, 2}), arg::ints({-1}), true});
  Node* r = call("aten.rsqrt.default", {call("aten.add.Tensor", {var, 1e-6})});
  Node* y = call("aten.mul.Tensor",
                 {w, call("aten.to.dtype", {call("aten.mul.Tensor", {up, r}), DType::kBFloat16})});
  b.output(arg::tuple({y}));
  auto g = b.build();
  std::vector<Tensor> in = {seeded_uniform({2, 1, 64}, 3).to(DType::kBFloat16),
                            seeded_uniform({64}, 4).to(DType::kBFloat16)};
  std::string plan = expect_rewrite_exact(*g, in, {in}, {"fuse_pointwise"}, 0);
  // fuse_rms_norm now makes the whole chain one upcast_rms_norm step (before fuse_pointwise).
  EXPECT_EQ(count_of(plan, "fused_pointwise") + count_of(plan, "= upcast_rms_norm("), 1) << plan;
  EXPECT_EQ(count_of(plan, "= rsqrt"), 0) << plan;
}

TEST(FusePointwise, MalformedProgramsAreRefusedNeverRun) {
  EXPECT_GT(random_programs_refused_or_run("fused_pointwise", 7, 9), 0);
}

#ifdef INPLACE_WITH_CUDA
using pointwise::Instr;
using pointwise::Opcode;

// What cuda's fused_pointwise kernel refuses (its supports, asked without a GPU): a cast the
// program cannot tell from an operand's implicit conversion, where the unfused CUDA kernels do
// not round the operand to the op's dtype (the kernel computes what they compute, bit for bit).
std::string cuda_refusal(const std::vector<Tensor>& inputs, const std::vector<Instr>& code) {
  const OpDef* op = Registry::get().find("fused_pointwise");
  const Supports* supports = KernelTable::get().supports(*op, DeviceType::kCuda);
  EXPECT_NE(supports, nullptr);
  std::vector<Value> in;
  for (const Tensor& t : inputs) in.push_back(Value::from_tensor(t));
  return (*supports)({Value::list(std::move(in)), Value::int_list(pointwise::encode(code))});
}

Instr instr(Opcode op, DType t, int32_t a = 0, int32_t b = 0, int32_t c = 0) {
  Instr in;
  in.op = op;
  in.dtype = static_cast<uint8_t>(t);
  in.a = a, in.b = b, in.c = c;
  return in;
}

// load input 0, cast it to `to`, negate, store.
std::vector<Instr> cast_then_neg(DType from, DType to) {
  return {instr(Opcode::kLoad, from), instr(Opcode::kCast, to, 0),
          instr(Opcode::kUnary, to, 1, static_cast<int32_t>(UnaryOp::kNeg)),
          instr(Opcode::kStore, to, 2)};
}

TEST(FusePointwise, CudaRefusesCastsItCannotTellFromAnImplicitConversion) {
  using D = DType;
  const Shape v = {4, 3}, scalar = {};
  struct Case {
    D from, to;
    Shape shape;
    bool runs;
  } cases[] = {
      {D::kFloat32, D::kBFloat16, v, true},        // `.to(bf16)`: a tensor never narrows implicitly
      {D::kFloat32, D::kBFloat16, scalar, false},  // a 0-dim float32 times a bf16 tensor is bf16
      {D::kFloat32, D::kFloat16, scalar, false},   //
      {D::kFloat64, D::kFloat32, scalar, true},    // float32 loads round alike
      {D::kInt64, D::kBFloat16, v, false},         // int64 tensor * bf16 tensor is bf16
      {D::kInt32, D::kFloat16, v, false},          //
      {D::kInt8, D::kBFloat16, v, true},           // exact
      {D::kInt64, D::kFloat32, v, true},           // one rounding in both
      {D::kInt64, D::kInt32, v, true},             // only explicit from a tensor
      {D::kInt64, D::kInt32, scalar, false},       // int32 tensor + int64 0-dim is int32
      {D::kFloat32, D::kInt32, scalar, true},      // a float never converts to an int implicitly
      {D::kBool, D::kFloat16, scalar, true},       // exact
      {D::kFloat16, D::kBool, v, true},            // != 0 either way
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(str_cat(dtype_name(c.from), " -> ", dtype_name(c.to), " rank ", c.shape.size()));
    const D neg_dtype = c.to == D::kBool ? D::kInt32 : c.to;  // neg does not run on bool
    std::vector<Instr> code = cast_then_neg(c.from, c.to);
    if (c.to == D::kBool)
      code = {code[0], code[1], instr(Opcode::kCast, neg_dtype, 1),
              instr(Opcode::kStore, neg_dtype, 2)};
    const std::string why = cuda_refusal({Tensor::meta(c.shape, c.from)}, code);
    EXPECT_EQ(why.empty(), c.runs) << why;
    if (!c.runs) EXPECT_NE(why.find("implicit conversion"), std::string::npos) << why;
  }
  // A bool number: masked_fill's truncates it to an integer, the logical ops test it for != 0.
  for (double number : {0.5, 2.0, 0.0}) {
    int32_t kind, lo, hi;
    pointwise::split_number(Scalar(number), &kind, &lo, &hi);
    Instr c = instr(Opcode::kConst, D::kBool, kind, lo, hi);
    Instr w = instr(Opcode::kWhere, D::kBool, 0, 1, 0);
    const std::string why =
        cuda_refusal({Tensor::meta(v, D::kBool)},
                     {instr(Opcode::kLoad, D::kBool), c, w, instr(Opcode::kStore, D::kBool, 2)});
    EXPECT_EQ(why.empty(), number != 0.5) << number << ": " << why;
  }
  // A number is only an operand of arithmetic, comparison or where's values.
  EXPECT_NE(
      cuda_refusal({Tensor::meta(v, D::kFloat32)},
                   {instr(Opcode::kLoad, D::kFloat32), instr(Opcode::kConst, D::kFloat32, 2),
                    instr(Opcode::kCast, D::kFloat64, 1), instr(Opcode::kStore, D::kFloat64, 2)}),
      "");
  EXPECT_NE(cuda_refusal({Tensor::meta({1, 1, 1, 1, 1, 1, 1, 1, 2}, D::kFloat32)},
                         cast_then_neg(D::kFloat32, D::kFloat32))
                .find("at most 8"),
            std::string::npos);
}

// The fused steps of `g` compiled with cuda's fusion choices (on the cpu) that cuda's kernel
// refuses: none may be (they would run on the host, which turns CUDA graphs off).
std::string cuda_refused_steps(const Graph& g, const std::vector<Tensor>& inputs) {
  CompileOptions o;
  o.fusion_device = DeviceType::kCuda;
  Plan p = compile(g, clones(inputs), o).engine->plan();
  p.device = Device::cuda();
  std::string out;
  for (const Step& s : p.steps)
    if (s.op && s.op->schema.name == "fused_pointwise")
      out += why_not_on_device(KernelTable::get(), s, p.device);
  return out;
}

TEST(FusePointwise, ForCudaAGroupItsKernelRefusesShrinksOrStaysUnfused) {
  // bf16 * (float32 0-dim) is bf16: the scalar's conversion is implicit, which the unfused CUDA
  // mul does not round; the neg and abs after it still fuse.
  GraphBuilder b("implicit");
  Node* x = b.set_meta(b.placeholder("x"), {4, 8}, DType::kBFloat16);
  Node* s = b.set_meta(b.placeholder("s"), {}, DType::kFloat32);
  auto call = [&](const char* t, std::vector<Arg> a) { return b.call_function(t, std::move(a)); };
  Node* y = call("aten.abs.default", {call("aten.neg.default", {call("aten.mul.Tensor", {x, s})})});
  b.output(arg::tuple({y}));
  auto g = b.build();
  std::vector<Tensor> in = {seeded_uniform({4, 8}, 3).to(DType::kBFloat16), seeded_uniform({}, 4)};
  CompileOptions cuda, unfused;
  cuda.fusion_device = DeviceType::kCuda;
  unfused.skip_passes = {"fuse_pointwise"};
  CompiledOnce for_cuda(*g, in, cuda), for_cpu(*g, in, {}), without(*g, in, unfused);
  EXPECT_EQ(count_of(for_cpu.plan(), "= fused_pointwise("), 1) << for_cpu.plan();
  EXPECT_EQ(count_of(for_cpu.plan(), "= mul.Tensor("), 0) << for_cpu.plan();
  EXPECT_EQ(count_of(for_cuda.plan(), "= fused_pointwise("), 1) << for_cuda.plan();
  EXPECT_EQ(count_of(for_cuda.plan(), "= mul.Tensor("), 1) << for_cuda.plan();
  EXPECT_EQ(cuda_refused_steps(*g, in), "");
  const Tensor want = without.call(in).outputs[0];
  EXPECT_TRUE(bitwise_equal(for_cuda.call(in).outputs[0], want));
  EXPECT_TRUE(bitwise_equal(for_cpu.call(in).outputs[0], want));
}

TEST(FusePointwise, ForCudaRandomChainsFuseOnlyWhatItsKernelRuns) {
  int fused_graphs = 0;
  for (uint32_t seed = 1; seed <= 120; ++seed) {
    SCOPED_TRACE(str_cat("seed ", seed));
    std::vector<Tensor> inputs;
    ChainWriter w(seed, {.zero_dim_inputs = true, .strided_inputs = true});
    std::unique_ptr<Graph> g = w.write(&inputs);
    set_cast_dtypes(*g, seed);
    CompileOptions cuda, unfused;
    cuda.fusion_device = DeviceType::kCuda;
    unfused.skip_passes = {"fuse_pointwise"};
    std::unique_ptr<CompiledOnce> without_pass;
    try {
      without_pass = std::make_unique<CompiledOnce>(*g, inputs, unfused);
    } catch (const Error&) {
      continue;  // a draw eager refuses too
    }
    CompiledOnce with_pass(*g, inputs, cuda);
    EXPECT_EQ(cuda_refused_steps(*g, inputs), "") << with_pass.plan();
    EngineCall a = with_pass.call(inputs), b = without_pass->call(inputs);
    for (size_t j = 0; j < a.outputs.size(); ++j)
      EXPECT_TRUE(bitwise_equal(a.outputs[j], b.outputs[j])) << with_pass.plan();
    fused_graphs += count_of(with_pass.plan(), "= fused_pointwise(") > 0;
  }
  EXPECT_GT(fused_graphs, 50);
}
#endif

}  // namespace
}  // namespace inplace::testing
