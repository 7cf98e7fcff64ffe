// Gemma's RMSNorm at a half dtype dt, (h * (1 + w.to(float32))).type_as(x) before a product, as
// torch.export records it, on small graphs: with the GPU's fusions the weight's cast and add
// join the norm form (norm="upcast_one_plus_weight", reading w) when w is the model's own (an
// input of dt, or of float32 where the cast is an identity), at bf16 and fp16; an add of another
// number, a 1 + w that something else reads and a weight computed in the graph keep their step.
// Each graph compiled with and without the norm prologues, run on fresh draws: bitwise equal, and
// bitwise the eager interpreter.
#include <gtest/gtest.h>

#include "compiler/hf_fixtures.h"
#include "compiler/rewrite_differential.h"
#include "ir/builder.h"

namespace inplace::testing {
namespace {

enum class Weight { kOwn, kFloat32, kAddTwo, kReadTwice, kComputed };

constexpr int64_t kK = 40, kN = 24;

// x [1, 1, kK] of dt, the norm's weight w [kK] (of dt; float32 for kFloat32), W [kN, kK] of dt.
std::unique_ptr<Graph> gemma_norm_graph(DType dt, Weight weight) {
  GraphBuilder b("gemma_norm");
  auto call = [&](const char* t, std::vector<Arg> a) { return b.call_function(t, std::move(a)); };
  Node* x = b.set_meta(b.placeholder("x"), {1, 1, kK}, dt);
  Node* w = b.set_meta(b.placeholder("w"), {kK}, weight == Weight::kFloat32 ? DType::kFloat32 : dt);
  Node* wl = b.set_meta(b.placeholder("w_linear"), {kN, kK}, dt);
  Node* up = call("aten.to.dtype", {x, DType::kFloat32});
  Node* var =
      call("aten.mean.dim", {call("aten.pow.Tensor_Scalar", {up, 2}), arg::ints({-1}), true});
  Node* h = call("aten.mul.Tensor",
                 {up, call("aten.rsqrt.default", {call("aten.add.Tensor", {var, 1e-6})})});
  Node* own = weight == Weight::kComputed ? call("aten.neg.default", {w}) : w;
  Node* wf = call("aten.add.Tensor", {call("aten.to.dtype", {own, DType::kFloat32}),
                                      weight == Weight::kAddTwo ? 2.0 : 1.0});
  Node* normed = call("aten.type_as.default", {call("aten.mul.Tensor", {h, wf}), x});
  Node* y = call("aten.linear.default", {normed, wl});
  if (weight == Weight::kReadTwice)
    b.output(arg::tuple({y, wf}));
  else
    b.output(arg::tuple({y}));
  return b.build();
}

// The GPU's fusion choices, the norm prologues on or off.
CompileOptions gpu_like(bool prologues) {
  CompileOptions o = gpu_like_options();
  o.fuse_norm_prologues = prologues;
  return o;
}

TEST(GemmaNormWeight, ItsOwnWeightJoinsTheNormForm) {
  for (DType dt : {DType::kBFloat16, DType::kFloat16})
    for (Weight weight :
         {Weight::kOwn, Weight::kFloat32, Weight::kAddTwo, Weight::kReadTwice, Weight::kComputed}) {
      const bool joins = weight == Weight::kOwn || weight == Weight::kFloat32;
      SCOPED_TRACE(str_cat(dtype_name(dt), " weight form ", static_cast<int>(weight)));
      auto g = gemma_norm_graph(dt, weight);
      std::vector<std::vector<Tensor>> draws;
      for (uint32_t s : {1u, 2u, 3u, 4u}) draws.push_back(seeded_hf_inputs(*g, s, 1));
      const CompiledOnce with(*g, draws[0], gpu_like(true)), without(*g, draws[0], gpu_like(false));
      const std::string plan = with.plan();
      EXPECT_EQ(count_of(plan, "= rms_norm_linear("), 1) << plan;
      // The weight's cast and add: a step of their own unless they join the form.
      const int steps = lines_with(plan, ": ", " = ") - lines_with(plan, "  s", " = ");
      EXPECT_EQ(steps == 1, joins) << plan;
      for (size_t d = 0; d < draws.size(); ++d) {
        SCOPED_TRACE(str_cat("draw ", d));
        const EngineCall a = with.call(draws[d]), b = without.call(draws[d]);
        ASSERT_EQ(a.outputs.size(), b.outputs.size());
        for (size_t j = 0; j < a.outputs.size(); ++j)
          EXPECT_TRUE(tensor_equal(a.outputs[j], b.outputs[j])) << "output " << j;
      }
      EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 0, gpu_like(true)), 4);
    }
}

}  // namespace
}  // namespace inplace::testing
