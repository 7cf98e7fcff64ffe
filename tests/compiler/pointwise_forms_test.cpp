// The straight-line forms of pointwise programs (ops/pointwise_forms.h): GPT-2's gelu_new is
// recognised in the program its compiled graph really carries, in commuted spellings, and in
// nothing else; its numbers are the program's.
#include <gtest/gtest.h>

#include "compiler/compile.h"
#include "compiler/hf_fixtures.h"
#include "ops/fused_addmm_args.h"
#include "ops/fused_pointwise_args.h"
#include "ops/pointwise_forms.h"
#include "ops/registry.h"

namespace inplace {
namespace {

using pointwise::Instr;
using pointwise::Opcode;

Instr ins(Opcode op, int32_t a = 0, int32_t b = 0, int32_t c = 0, int32_t d = 0) {
  Instr in;
  in.op = op;
  in.dtype = static_cast<uint8_t>(DType::kBFloat16);
  in.a = a, in.b = b, in.c = c, in.d = d;
  return in;
}
Instr number(double v) {
  int32_t kind, lo, hi;
  pointwise::split_number(Scalar(v), &kind, &lo, &hi);
  return ins(Opcode::kConst, kind, lo, hi);
}
Instr pow_of(int32_t r, double v) {
  int32_t kind, lo, hi;
  pointwise::split_number(Scalar(v), &kind, &lo, &hi);
  return ins(Opcode::kPowScalar, r, kind, lo, hi);
}
Instr binary(BinaryOp op, int32_t a, int32_t b) {
  return ins(Opcode::kBinary, a, b, static_cast<int32_t>(op));
}

// gelu_new in the order torch.export records it for Hugging Face's GPT-2.
std::vector<Instr> gelu_new() {
  return {ins(Opcode::kLoad),
          number(0.5),
          binary(BinaryOp::kMul, 0, 1),
          pow_of(0, 3.0),
          number(0.044715),
          binary(BinaryOp::kMul, 3, 4),
          binary(BinaryOp::kAdd, 0, 5),
          number(0.7978845608028654),
          binary(BinaryOp::kMul, 6, 7),
          ins(Opcode::kUnary, 8, static_cast<int32_t>(UnaryOp::kTanh)),
          number(1.0),
          binary(BinaryOp::kAdd, 9, 10),
          binary(BinaryOp::kMul, 2, 11),
          ins(Opcode::kStore, 12)};
}

bool matches(const std::vector<Instr>& code, pointwise::GeluNew* f) {
  return pointwise::match_gelu_new(code.data(), static_cast<int>(code.size()), f);
}

TEST(PointwiseForms, GeluNewAndItsNumbers) {
  pointwise::GeluNew f;
  ASSERT_TRUE(matches(gelu_new(), &f));
  EXPECT_EQ(f.half, 0.5f);
  EXPECT_EQ(f.p, 3.0f);
  EXPECT_EQ(f.a, static_cast<float>(0.044715));
  EXPECT_EQ(f.c, static_cast<float>(0.7978845608028654));
  EXPECT_EQ(f.one, 1.0f);
}

TEST(PointwiseForms, GeluNewWithCommutedOperands) {
  std::vector<Instr> code = gelu_new();
  std::swap(code[2].a, code[2].b);    // 0.5 * x
  std::swap(code[6].a, code[6].b);    // x3 * a + x
  std::swap(code[12].a, code[12].b);  // (1 + tanh) * half
  pointwise::GeluNew f;
  EXPECT_TRUE(matches(code, &f));
  EXPECT_EQ(f.half, 0.5f);
}

// The order CudaFusedAddmm's epilogue tests write it in (x ** 3 first, 0.5 * x late).
TEST(PointwiseForms, GeluNewInAnotherOrder) {
  const std::vector<Instr> code = {ins(Opcode::kLoad),
                                   pow_of(0, 3.0),
                                   number(0.044715),
                                   binary(BinaryOp::kMul, 2, 1),
                                   binary(BinaryOp::kAdd, 0, 3),
                                   number(0.7978845608028654),
                                   binary(BinaryOp::kMul, 5, 4),
                                   ins(Opcode::kUnary, 6, static_cast<int32_t>(UnaryOp::kTanh)),
                                   number(1.0),
                                   binary(BinaryOp::kAdd, 8, 7),
                                   number(0.5),
                                   binary(BinaryOp::kMul, 10, 0),
                                   binary(BinaryOp::kMul, 11, 9),
                                   ins(Opcode::kStore, 12)};
  pointwise::GeluNew f;
  EXPECT_TRUE(matches(code, &f));
  EXPECT_EQ(f.c, static_cast<float>(0.7978845608028654));
}

TEST(PointwiseForms, NotGeluNew) {
  pointwise::GeluNew f;
  std::vector<Instr> sub = gelu_new();
  sub[11] = binary(BinaryOp::kSub, 9, 10);  // tanh - 1
  EXPECT_FALSE(matches(sub, &f));
  std::vector<Instr> other_input = gelu_new();
  other_input[0].a = 1;  // a second input
  EXPECT_FALSE(matches(other_input, &f));
  std::vector<Instr> two_dtypes = gelu_new();
  two_dtypes[9].dtype = static_cast<uint8_t>(DType::kFloat32);
  EXPECT_FALSE(matches(two_dtypes, &f));
  std::vector<Instr> exp = gelu_new();
  exp[9].b = static_cast<int32_t>(UnaryOp::kExp);
  EXPECT_FALSE(matches(exp, &f));
  std::vector<Instr> no_pow = gelu_new();
  no_pow[3] = binary(BinaryOp::kMul, 0, 0);  // x * x, not x ** 3
  EXPECT_FALSE(matches(no_pow, &f));
  EXPECT_FALSE(matches({ins(Opcode::kLoad), ins(Opcode::kStore, 0)}, &f));
}

// The c_fc epilogue of the exported GPT-2 (bf16 fixture, compiled for the cpu with the weights
// as they lie, as for a GPU, where the same passes write it) is the recognised form.
TEST(PointwiseForms, Gpt2ExportCarriesGeluNew) {
  auto g = testing::hf_fixture("gpt2_bf16");
  CompileOptions o;
  o.prepare_weights = false;
  const CompiledProgram cpu = compile(*g, testing::seeded_hf_inputs(*g, 1, 64), o);
  int programs = 0;
  for (const Step& s : cpu.engine->plan().steps) {
    if (!s.op || s.op->schema.name != fused_addmm::kName || !fused_addmm::has_epilogue(s.args))
      continue;
    const pointwise::Program p = pointwise::decode(
        s.args[fused_addmm::kEpilogue].as_int_list(fused_addmm::kName), {DType::kBFloat16});
    pointwise::GeluNew f;
    EXPECT_TRUE(pointwise::match_gelu_new(p.code.data(), static_cast<int>(p.code.size()), &f))
        << s.node;
    ++programs;
  }
  EXPECT_EQ(programs, 2);  // each layer's c_fc
}

}  // namespace
}  // namespace inplace
