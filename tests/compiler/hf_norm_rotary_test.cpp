// The RMSNorm and rotary spellings torch.export records for Hugging Face models reach the fused
// ops: the float32 upcast and cast back around the norm (identities at float32, dropped by
// drop_identity_casts), the norm's weight an input (an exported parameter), the rotate-half
// halves as aten.slice. Proved against the graph without drop_identity_casts and against the
// eager interpreter; near misses (a cast that changes the dtype, a mean over another dim, an eps
// read elsewhere) keep their chain. Tolerance 1e-5: rms_norm keeps its statistics in double.
#include <gtest/gtest.h>

#include "compiler/hf_fixtures.h"
#include "compiler/rewrite_differential.h"
#include "frontend/graph_json.h"
#include "ir/builder.h"

namespace inplace::testing {
namespace {

constexpr double kTol = 1e-5;

TEST(HfNormRotary, LlamaFixtureReachesRmsNormAndRotary) {
  for (const char* model : {"llama", "qwen2"}) {
    SCOPED_TRACE(model);
    auto g = hf_fixture(model);
    std::vector<std::vector<Tensor>> draws;
    for (uint32_t s = 1; s <= 5; ++s) draws.push_back(seeded_hf_inputs(*g, s * 11, 64));
    std::string plan = expect_rewrite_exact(*g, draws[0], draws, {"drop_identity_casts"}, kTol);
    EXPECT_EQ(count_of(plan, "= rms_norm("), 5) << plan;  // 2 per layer and the final norm
    EXPECT_EQ(count_of(plan, "= pow."), 0) << plan;
    EXPECT_EQ(count_of(plan, "= rotary_embedding("), 4) << plan;  // q and k per layer
    EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, kTol), 5);
  }
}

// kCastToHalf: the result cast to float16 before the weight (a rounding, not an identity).
enum class NormForm { kHf, kCastToHalf, kMeanOverDim0, kEpsReadTwice };

// HF's LlamaRMSNorm at float32: w * (x.to(f32) * rsqrt(mean(x^2, -1) + eps)).to(f32), w an input.
std::unique_ptr<Graph> norm_graph(NormForm form) {
  GraphBuilder b("norm");
  Node* x = b.set_meta(b.placeholder("x"), {2, 3, 16}, DType::kFloat32);
  Node* w = b.set_meta(b.placeholder("w"), {16}, DType::kFloat32);
  auto call = [&](const char* t, std::vector<Arg> a) { return b.call_function(t, std::move(a)); };
  Node* up = call("aten.to.dtype", {x, DType::kFloat32});
  Node* var = call("aten.mean.dim", {call("aten.pow.Tensor_Scalar", {up, 2}),
                                     arg::ints({form == NormForm::kMeanOverDim0 ? 0 : -1}), true});
  Node* eps = call("aten.add.Tensor", {var, 1e-6});
  Node* y = call("aten.mul.Tensor", {up, call("aten.rsqrt.default", {eps})});
  const DType back = form == NormForm::kCastToHalf ? DType::kFloat16 : DType::kFloat32;
  Node* out = call("aten.mul.Tensor", {w, call("aten.to.dtype", {y, back})});
  if (form == NormForm::kEpsReadTwice)
    b.output(arg::tuple({out, eps}));
  else
    b.output(arg::tuple({out}));
  return b.build();
}

TEST(HfNormRotary, RmsNormWithCastsAndInputWeight) {
  for (NormForm form :
       {NormForm::kHf, NormForm::kCastToHalf, NormForm::kMeanOverDim0, NormForm::kEpsReadTwice}) {
    SCOPED_TRACE(static_cast<int>(form));
    auto g = norm_graph(form);
    std::vector<std::vector<Tensor>> draws;
    for (uint32_t s = 1; s <= 4; ++s) draws.push_back(seeded_hf_inputs(*g, s, 64));
    std::string plan = expect_rewrite_exact(*g, draws[0], draws, {"drop_identity_casts"}, kTol);
    EXPECT_EQ(count_of(plan, "= rms_norm("), form == NormForm::kHf ? 1 : 0) << plan;
    EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws,
                                           form == NormForm::kCastToHalf ? 1e-3 : kTol),
              4);
  }
}

}  // namespace
}  // namespace inplace::testing
