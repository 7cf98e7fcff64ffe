// fuse_pointwise: random chains of 2-12 elementwise ops (unary math, arithmetic with tensors and
// Python numbers, pow by a number, casts, comparisons, where / masked_fill) over random
// broadcast shapes and dtypes (float32, bfloat16, float16, int32, int64, bool), compiled with
// and without the pass: the outputs must be bitwise equal, and the fused plan must run fewer
// steps. A malformed program is refused naming the instruction, for any bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "backend/eager_call.h"
#include "compiler/rewrite_differential.h"
#include "ir/builder.h"
#include "ops/elementwise_args.h"
#include "ops/fused_pointwise_args.h"
#include "ops/registry.h"

namespace inplace::testing {
namespace {

const DType kDTypes[] = {DType::kFloat32, DType::kBFloat16, DType::kFloat16,
                         DType::kInt32,   DType::kInt64,    DType::kBool};

struct Val {
  Node* node;
  Shape shape;
  DType dtype;
};

DType promote(const Val& a, const Val* b, std::optional<Scalar> s) {
  elementwise::Operand x(Tensor::meta(a.shape, a.dtype));
  elementwise::Operand y =
      b ? elementwise::Operand(Tensor::meta(b->shape, b->dtype)) : elementwise::Operand(*s);
  return elementwise::result_type({&x, &y});
}

// Writes a random chain; returns false when the draw made nothing worth fusing.
class ChainWriter {
 public:
  explicit ChainWriter(uint32_t seed) : rng_(seed), b_("chain") {}

  std::unique_ptr<Graph> write(std::vector<Tensor>* inputs) {
    const Shape full = {2, pick(1, 3), pick(3, 9)};
    const int n_inputs = pick(1, 3);
    std::vector<Val> ins;
    for (int i = 0; i < n_inputs; ++i) {
      Shape s = full;
      for (auto& d : s)
        if (pick(0, 3) == 0) d = 1;
      if (i == 0) s = full;
      const DType t = kDTypes[pick(0, i == 0 ? 4 : 5)];
      Node* p = b_.set_meta(b_.placeholder("in" + std::to_string(i)), s, t);
      ins.push_back({p, s, t});
      inputs->push_back(random_tensor(s, t));
    }
    Val cur = ins[0];
    const int n_ops = pick(2, 12);
    for (int k = 0; k < n_ops; ++k) cur = step(cur, ins[pick(0, n_inputs - 1)]);
    b_.output(arg::tuple({cur.node}));
    return b_.build();
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  Tensor random_tensor(const Shape& s, DType t) {
    Tensor f = Tensor::empty(s, DType::kFloat32);
    for (int64_t i = 0; i < f.numel(); ++i)
      f.data<float>()[i] = is_floating(t) ? static_cast<float>(pick(-3000, 3000)) / 997.0f
                                          : static_cast<float>(pick(-4, 4));
    return f.to(t);
  }

  Node* call(const char* target, std::vector<Arg> args) {
    return b_.call_function(target, std::move(args));
  }

  Val step(const Val& x, const Val& other) {
    const Shape shape = broadcast_shapes(x.shape, other.shape, "test");
    const bool fl = is_floating(x.dtype);
    switch (pick(0, 8)) {
      case 0: {  // float math
        if (x.dtype == DType::kBool) break;
        static const char* kOps[] = {"aten.exp.default",     "aten.tanh.default",
                                     "aten.sigmoid.default", "aten.rsqrt.default",
                                     "aten.sin.default",     "aten.sqrt.default"};
        return {call(kOps[pick(0, 5)], {x.node}), x.shape, fl ? x.dtype : DType::kFloat32};
      }
      case 1:  // float-only activations
        if (!fl) break;
        return {call(pick(0, 1) ? "aten.silu.default" : "aten.gelu.default", {x.node}), x.shape,
                x.dtype};
      case 2: {  // neg abs relu
        if (x.dtype == DType::kBool) break;
        static const char* kOps[] = {"aten.neg.default", "aten.abs.default", "aten.relu.default"};
        return {call(kOps[pick(0, 2)], {x.node}), x.shape, x.dtype};
      }
      case 3: {  // arithmetic with a tensor
        static const char* kOps[] = {"aten.add.Tensor", "aten.mul.Tensor", "aten.sub.Tensor",
                                     "aten.div.Tensor", "aten.maximum.default"};
        const int o = pick(0, 4);
        if (o == 2 && (x.dtype == DType::kBool || other.dtype == DType::kBool)) break;
        DType t = promote(x, &other, std::nullopt);
        if (o == 3 && !is_floating(t)) t = DType::kFloat32;
        return {call(kOps[o], {x.node, other.node}), shape, t};
      }
      case 4: {  // arithmetic with a Python number (kept in opmath by mul and div)
        static const char* kOps[] = {"aten.add.Tensor", "aten.mul.Tensor", "aten.div.Tensor"};
        const int o = pick(0, 2);
        const bool f = pick(0, 1);
        const Scalar s = f ? Scalar(0.1 * pick(1, 30)) : Scalar(int64_t{pick(1, 5)});
        DType t = promote(x, nullptr, s);
        if (o == 2 && !is_floating(t)) t = DType::kFloat32;
        Arg a = f ? Arg(s.to_double()) : Arg(s.to_int());
        return {call(kOps[o], {x.node, a}), x.shape, t};
      }
      case 5: {  // pow by a number: the fast paths and the general one
        if (x.dtype == DType::kBool) break;
        static const double kE[] = {2.0, 0.5, 3.0, -1.0, 1.7, -2.0};
        const double e = is_floating(x.dtype) ? kE[pick(0, 5)] : 2.0;
        const Scalar s = is_floating(x.dtype) ? Scalar(e) : Scalar(int64_t{2});
        Arg a = is_floating(x.dtype) ? Arg(e) : Arg(2);
        return {call("aten.pow.Tensor_Scalar", {x.node, a}), x.shape, promote(x, nullptr, s)};
      }
      case 6: {  // a cast
        const DType t = kDTypes[pick(0, 5)];
        return {call("aten._to_copy.default", {x.node}), x.shape, t};
      }
      case 7: {  // a comparison, then where over it
        static const char* kOps[] = {"aten.lt.Tensor", "aten.gt.Tensor", "aten.eq.Tensor",
                                     "aten.ge.Tensor"};
        Node* c = call(kOps[pick(0, 3)], {x.node, other.node});
        if (pick(0, 1)) return {c, shape, DType::kBool};
        return {call("aten.where.self", {c, x.node, other.node}), shape,
                promote(x, &other, std::nullopt)};
      }
      case 8: {  // masked_fill by a comparison with a number
        if (x.dtype == DType::kBool) break;
        Node* m = call("aten.gt.Scalar", {other.node, 0});
        Node* r = call("aten.masked_fill.Scalar", {x.node, m, is_floating(x.dtype) ? -1.5 : -1.0});
        return {r, shape, x.dtype};
      }
    }
    return {call("aten.mul.Tensor", {x.node, other.node}), shape, promote(x, &other, std::nullopt)};
  }

  std::mt19937 rng_;
  GraphBuilder b_;
};

// _to_copy takes its dtype as a keyword: the writer's casts get it here.
void set_cast_dtypes(Graph& g, uint32_t seed) {
  std::mt19937 rng(seed);
  for (Node* n : g.nodes())
    if (n->target == "aten._to_copy.default")
      n->kwargs.push_back({"dtype", Value::dtype_value(kDTypes[rng() % 6])});
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

TEST(FusePointwise, RandomChainsAreBitwiseTheUnfusedChain) {
  int fused_graphs = 0;
  for (uint32_t seed = 1; seed <= 150; ++seed) {
    SCOPED_TRACE(str_cat("seed ", seed));
    std::vector<Tensor> inputs;
    ChainWriter w(seed);
    std::unique_ptr<Graph> g = w.write(&inputs);
    set_cast_dtypes(*g, seed);
    CompileOptions without;
    without.skip_passes = {"fuse_pointwise"};
    std::unique_ptr<CompiledOnce> with_pass, without_pass;
    try {
      without_pass = std::make_unique<CompiledOnce>(*g, inputs, without);
    } catch (const Error& e) {
      continue;  // a draw eager refuses too (a dtype an op lacks)
    }
    with_pass = std::make_unique<CompiledOnce>(*g, inputs, CompileOptions{});
    EngineCall a = with_pass->call(inputs), b = without_pass->call(inputs);
    ASSERT_EQ(a.outputs.size(), b.outputs.size());
    for (size_t j = 0; j < a.outputs.size(); ++j)
      EXPECT_TRUE(bitwise_equal(a.outputs[j], b.outputs[j])) << "output " << j << "\n"
                                                             << with_pass->plan() << "\n"
                                                             << without_pass->plan();
    fused_graphs += count_of(with_pass->plan(), "fused_pointwise") > 0;
  }
  EXPECT_GT(fused_graphs, 80);
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
  const OpDef* op = Registry::get().find("fused_pointwise");
  ASSERT_NE(op, nullptr);
  std::mt19937 rng(7);
  int accepted = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    // Mostly well-formed fields (small opcodes, dtypes and register numbers), some wild ones.
    const int n = static_cast<int>(rng() % 5 + 2);
    std::vector<int64_t> program;
    for (int i = 0; i < n; ++i) {
      const int64_t fields[pointwise::kWidth] = {i == n - 1 ? 8 : static_cast<int64_t>(rng() % 9),
                                                 rng() % 2 ? 0 : static_cast<int64_t>(rng() % 11),
                                                 static_cast<int64_t>(rng() % (i + 2)),
                                                 static_cast<int64_t>(rng() % (i + 2)),
                                                 static_cast<int64_t>(rng() % (i + 2)),
                                                 static_cast<int64_t>(rng() % 3)};
      for (int64_t f : fields) program.push_back(rng() % 50 == 0 ? int64_t(rng()) - (1 << 30) : f);
    }
    if (trial % 9 == 0) program.push_back(1);
    Args args = {Value::list({Value::from_tensor(Tensor::meta({4, 3}, DType::kFloat32)),
                              Value::from_tensor(Tensor::meta({3}, DType::kInt64))}),
                 Value::int_list(program)};
    try {
      std::vector<Tensor> metas = op->infer(args);
      ++accepted;
      // What the shape rule accepts, the cpu kernel runs without fault.
      Tensor a = seeded_uniform({4, 3}, trial), bi = Tensor::zeros({3}, DType::kInt64);
      Value r = eager_call(*op, {Value::list({Value::from_tensor(a), Value::from_tensor(bi)}),
                                 Value::int_list(program)});
      EXPECT_EQ(r.tensor.shape(), metas[0].shape());
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("fused_pointwise"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace inplace::testing
