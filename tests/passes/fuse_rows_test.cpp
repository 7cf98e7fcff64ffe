// fuse_pointwise's row reductions (fused_rows): random chains with sums, means, amax and amin
// over the last dim inside them, rows of 1 to 600, float32, bfloat16, float16 and float64,
// inputs as they lie or as strided views,
// compiled with and without the pass: outputs bitwise equal, fewer steps. The norms and the
// softmax a model writes by hand (no named rewrite knows them) become one step each, exact on
// fresh draws of one compiled engine. A malformed fused_rows program is refused naming the op.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "backend/eager_call.h"
#include "compiler/rewrite_differential.h"
#include "ir/builder.h"
#include "ops/fused_pointwise_args.h"
#include "ops/registry.h"
#include "passes/pointwise_chains.h"
#include "passes/random_chain_check.h"

namespace inplace::testing {
namespace {

// Row reductions fused (the cpu's and cuda's default; said here so the tests keep their subject).
CompileOptions with_rows() {
  CompileOptions o;
  o.fuse_rows = true;
  return o;
}

// `g` with fused rows and without fuse_pointwise, on every draw: bitwise equal. The fused plan.
std::string expect_rows_exact(const Graph& g, const std::vector<std::vector<Tensor>>& draws) {
  CompileOptions without;
  without.skip_passes = {"fuse_pointwise"};
  CompiledOnce fused(g, draws[0], with_rows()), unfused(g, draws[0], without);
  expect_engines_equal(fused, unfused, draws, 0);
  return fused.plan();
}

TEST(FuseRows, RandomChainsWithRowReductionsAreBitwiseTheUnfusedChain) {
  // Inputs as views (a transpose, every second element) reduced directly: the unfused sum's
  // order follows the input's stride, and the fused one must follow it too.
  auto options = [](uint32_t seed) {
    return ChainOptions{.strided_inputs = seed % 3 == 0, .row_reductions = true};
  };
  EXPECT_GT(fused_random_chains(300, options, "= fused_rows(", with_rows()), 80);
}

Node* call(GraphBuilder& b, const char* target, std::vector<Arg> args) {
  return b.call_function(target, std::move(args));
}

// Draws of x over every float class a row meets: ordinary values, -0, a whole row of -0 (its
// sum is +0), infinities and NaN in some rows.
std::vector<std::vector<Tensor>> draws_of(const Shape& shape, DType t, int n, uint32_t seed) {
  std::vector<std::vector<Tensor>> out;
  for (int d = 0; d < n; ++d) {
    Tensor x = seeded_uniform(shape, seed + d);
    float* p = x.data<float>();
    const int64_t cols = shape.back();
    if (d % 3 == 1) {
      for (int64_t c = 0; c < cols; ++c) p[c] = -0.0f;  // row 0: all -0
      p[cols] = std::numeric_limits<float>::infinity();
      if (x.numel() > 2 * cols) p[2 * cols + 1] = std::numeric_limits<float>::quiet_NaN();
    }
    out.push_back({x.to(t), seeded_uniform({shape.back()}, seed + 100 + d).to(t)});
  }
  return out;
}

// x / sqrt(mean(x * x) + eps) * w: an RMSNorm spelled with sqrt and div, which no named rewrite
// takes: one fused_rows step.
TEST(FuseRows, AHandWrittenNormIsOneStepExactOnEveryDraw) {
  for (DType t : {DType::kFloat32, DType::kBFloat16, DType::kFloat16, DType::kFloat64}) {
    for (int64_t cols : {int64_t{1}, int64_t{7}, int64_t{300}}) {
      SCOPED_TRACE(str_cat(dtype_name(t), " cols ", cols));
      GraphBuilder b("norm");
      const Shape shape = {3, 2, cols};
      Node* x = b.set_meta(b.placeholder("x"), shape, t);
      Node* w = b.set_meta(b.placeholder("w"), {cols}, t);
      Node* ms =
          call(b, "aten.mean.dim", {call(b, "aten.mul.Tensor", {x, x}), arg::ints({-1}), true});
      Node* d = call(b, "aten.sqrt.default", {call(b, "aten.add.Tensor", {ms, 1e-5})});
      Node* y = call(b, "aten.mul.Tensor", {call(b, "aten.div.Tensor", {x, d}), w});
      b.output(arg::tuple({y}));
      auto g = b.build();
      auto draws = draws_of(shape, t, 4, 11);
      std::string plan = expect_rows_exact(*g, draws);
      EXPECT_EQ(count_of(plan, "= fused_rows("), 1) << plan;
      EXPECT_EQ(count_of(plan, "= mean"), 0) << plan;
      EXPECT_EQ(count_of(plan, "= fused_pointwise("), 0) << plan;
    }
  }
}

// softmax by hand: e = exp(x - amax(x)); e / sum(e). e is read twice, both readers in the
// chain: one step instead of five.
TEST(FuseRows, AHandWrittenSoftmaxIsOneStep) {
  for (DType t : {DType::kFloat32, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    GraphBuilder b("softmax");
    const Shape shape = {4, 257};
    Node* x = b.set_meta(b.placeholder("x"), shape, t);
    b.set_meta(b.placeholder("unused"), {257}, t);
    Node* m = call(b, "aten.amax.default", {x, arg::ints({-1}), true});
    Node* e = call(b, "aten.exp.default", {call(b, "aten.sub.Tensor", {x, m})});
    Node* s = call(b, "aten.sum.dim_IntList", {e, arg::ints({1}), true});
    b.output(arg::tuple({call(b, "aten.div.Tensor", {e, s})}));
    auto g = b.build();
    auto draws = draws_of(shape, t, 4, 23);
    std::string plan = expect_rows_exact(*g, draws);
    EXPECT_EQ(count_of(plan, "= fused_rows("), 1) << plan;
    EXPECT_EQ(count_of(plan, "= amax("), 0) << plan;
    EXPECT_EQ(count_of(plan, "= sum"), 0) << plan;
  }
}

// LayerNorm by hand: xm = x - mean(x); xm / sqrt(mean(xm^2) + eps) * w: one step with its two
// reductions (xm is read twice, both readers in the chain).
TEST(FuseRows, AHandWrittenLayerNormIsOneStep) {
  GraphBuilder b("layer_norm");
  const Shape shape = {2, 3, 96};
  Node* x = b.set_meta(b.placeholder("x"), shape, DType::kBFloat16);
  Node* w = b.set_meta(b.placeholder("w"), {96}, DType::kBFloat16);
  Node* xm = call(b, "aten.sub.Tensor", {x, call(b, "aten.mean.dim", {x, arg::ints({-1}), true})});
  Node* var =
      call(b, "aten.mean.dim", {call(b, "aten.pow.Tensor_Scalar", {xm, 2}), arg::ints({-1}), true});
  Node* y =
      call(b, "aten.mul.Tensor",
           {call(b, "aten.div.Tensor",
                 {xm, call(b, "aten.sqrt.default", {call(b, "aten.add.Tensor", {var, 1e-5})})}),
            w});
  b.output(arg::tuple({y}));
  auto g = b.build();
  auto draws = draws_of(shape, DType::kBFloat16, 4, 31);
  std::string plan = expect_rows_exact(*g, draws);
  EXPECT_EQ(count_of(plan, "= fused_rows("), 1) << plan;
  EXPECT_EQ(count_of(plan, "= mean"), 0) << plan;
}

// An intermediate read twice inside a chain (y = a * b; y * y + y) is one register: one step. One
// read outside the chain (y is also an output) stays a step of its own.
TEST(FuseRows, AnIntermediateReadOnlyInsideTheChainJoinsIt) {
  for (bool escapes : {false, true}) {
    SCOPED_TRACE(escapes ? "y is an output" : "y read inside only");
    GraphBuilder b("shared");
    Node* a = b.set_meta(b.placeholder("a"), {4, 8}, DType::kBFloat16);
    Node* c = b.set_meta(b.placeholder("c"), {8}, DType::kBFloat16);
    Node* y = call(b, "aten.mul.Tensor", {a, c});
    Node* z = call(b, "aten.add.Tensor", {call(b, "aten.mul.Tensor", {y, y}), y});
    b.output(escapes ? arg::tuple({z, y}) : arg::tuple({z}));
    auto g = b.build();
    std::vector<Tensor> in = {seeded_uniform({4, 8}, 1).to(DType::kBFloat16),
                              seeded_uniform({8}, 2).to(DType::kBFloat16)};
    std::string plan = expect_rows_exact(*g, {in});
    EXPECT_EQ(count_of(plan, "= fused_pointwise("), 1) << plan;
    EXPECT_EQ(count_of(plan, "= mul.Tensor("), escapes ? 1 : 0) << plan;
  }
}

// A row reduction of an input view (a transpose, every second element): the unfused sum walks
// the view at its stride, one chain, where it walks a unit-stride row in four; fused_rows sums
// each in the order its unfused kernel does (float64 values whose sums depend on it).
TEST(FuseRows, ReductionsOfStridedViewsSumInTheUnfusedOrder) {
  for (int layout = 0; layout < 3; ++layout) {
    for (const char* reduce : {"aten.sum.dim_IntList", "aten.mean.dim"}) {
      SCOPED_TRACE(str_cat("layout ", layout, " ", reduce));
      const int64_t cols = 257;
      GraphBuilder b("views");
      const Shape stored = layout == 1   ? Shape{cols, 4}
                           : layout == 2 ? Shape{4, 2 * cols}
                                         : Shape{4, cols};
      Node* p = b.set_meta(b.placeholder("x"), stored, DType::kFloat64);
      Node* x = layout == 1   ? call(b, "aten.transpose.int", {p, 0, 1})
                : layout == 2 ? call(b, "aten.slice.Tensor", {p, -1, 0, 2 * cols, 2})
                              : p;
      Node* y = b.set_meta(b.placeholder("y"), {4, cols}, DType::kFloat64);
      Node* r = call(b, reduce, {x, arg::ints({-1}), true});
      b.output(arg::tuple({call(b, "aten.mul.Tensor", {call(b, "aten.exp.default", {y}), r})}));
      auto g = b.build();
      // Doubles of full precision and mixed magnitudes, whose sums depend on their order.
      std::mt19937_64 rng(40);
      std::uniform_real_distribution<double> u(-1.0, 1.0);
      auto full = [&](const Shape& shape) {
        Tensor t = Tensor::empty(shape, DType::kFloat64);
        for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = u(rng) * (i % 5 ? 1 : 1e9);
        return t;
      };
      std::vector<std::vector<Tensor>> draws;
      for (int d = 0; d < 3; ++d) draws.push_back({full(stored), full({4, cols})});
      std::string plan = expect_rows_exact(*g, draws);
      EXPECT_EQ(count_of(plan, "= fused_rows("), 1) << plan;
    }
  }
}

// Whether rows fuse is the backend's preference (the cpu's: yes) unless the caller says
// (CompileOptions::fuse_rows, INPLACE_FUSE_ROWS).
TEST(FuseRows, TheBackendsPreferenceDecides) {
  GraphBuilder b("norm");
  Node* x = b.set_meta(b.placeholder("x"), {2, 64}, DType::kFloat32);
  Node* ms = call(b, "aten.mean.dim", {call(b, "aten.mul.Tensor", {x, x}), arg::ints({-1}), true});
  b.output(arg::tuple({call(b, "aten.div.Tensor", {x, call(b, "aten.sqrt.default", {ms})})}));
  auto g = b.build();
  std::vector<Tensor> in = {seeded_uniform({2, 64}, 3)};
  EXPECT_EQ(count_of(CompiledOnce(*g, in, {}).plan(), "= fused_rows("), 1);
  CompileOptions no_rows;
  no_rows.fuse_rows = false;
  const std::string cpu = CompiledOnce(*g, in, no_rows).plan();
  EXPECT_EQ(count_of(cpu, "= fused_rows("), 0) << cpu;
  EXPECT_EQ(count_of(cpu, "= mean"), 1) << cpu;
#ifdef INPLACE_WITH_CUDA
  CompileOptions cuda;
  cuda.fusion_device = DeviceType::kCuda;
  cuda.fuse_rows = true;  // cuda's kernel runs the program (its supports, asked without a GPU)
  const std::string for_cuda = CompiledOnce(*g, in, cuda).plan();
  EXPECT_EQ(count_of(for_cuda, "= fused_rows("), 1) << for_cuda;
#endif
}

// A reduction whose rows are not the chain's result's (its operand broadcasts into a larger
// result) stays its own step: the fused step's rows are its result's.
TEST(FuseRows, AReductionOverOtherRowsStaysUnfused) {
  GraphBuilder b("other_rows");
  Node* x = b.set_meta(b.placeholder("x"), {1, 16}, DType::kFloat32);
  Node* y = b.set_meta(b.placeholder("y"), {5, 16}, DType::kFloat32);
  Node* s =
      call(b, "aten.sum.dim_IntList", {call(b, "aten.exp.default", {x}), arg::ints({-1}), true});
  b.output(arg::tuple({call(b, "aten.mul.Tensor", {y, s})}));
  auto g = b.build();
  std::vector<Tensor> in = {seeded_uniform({1, 16}, 5), seeded_uniform({5, 16}, 6)};
  std::string plan = expect_rows_exact(*g, {in});
  EXPECT_EQ(count_of(plan, "= fused_rows("), 0) << plan;
  EXPECT_EQ(count_of(plan, "= sum"), 1) << plan;
}

TEST(FuseRows, ARowReductionIsAFusedRowsInstructionOnly) {
  using pointwise::Opcode;
  // load x; reduce it (sum); store: valid for fused_rows, refused for fused_pointwise.
  const std::vector<int64_t> program = {
      static_cast<int64_t>(Opcode::kLoad),   static_cast<int64_t>(DType::kFloat32), 0, 0, 0, 0,
      static_cast<int64_t>(Opcode::kReduce), static_cast<int64_t>(DType::kFloat32), 0, 0, 0, 0,
      static_cast<int64_t>(Opcode::kStore),  static_cast<int64_t>(DType::kFloat32), 1, 0, 0, 0};
  const Args args = {Value::list({Value::from_tensor(Tensor::meta({2, 3}, DType::kFloat32))}),
                     Value::int_list(program)};
  try {
    Registry::get().find("fused_pointwise")->infer(args);
    FAIL() << "fused_pointwise ran a row reduction";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fused_rows instruction"), std::string::npos) << e.what();
  }
  const OpDef* rows = Registry::get().find("fused_rows");
  EXPECT_EQ(rows->infer(args)[0].shape(), (Shape{2, 3}));
  Tensor x = seeded_uniform({2, 3}, 9);
  Value r = eager_call(*rows, {Value::list({Value::from_tensor(x)}), Value::int_list(program)});
  for (int64_t i = 0; i < 2; ++i) {
    const float* p = x.data<float>() + 3 * i;
    const double sum = double(p[0]) + double(p[1]) + double(p[2]);
    for (int64_t c = 0; c < 3; ++c)
      EXPECT_EQ(r.tensor.data<float>()[3 * i + c], static_cast<float>(sum)) << i << " " << c;
  }
}

TEST(FuseRows, MalformedProgramsAreRefusedNeverRun) {
  EXPECT_GT(random_programs_refused_or_run("fused_rows", 11, 10), 0);
}

}  // namespace
}  // namespace inplace::testing
