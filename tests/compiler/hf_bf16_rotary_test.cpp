// The rotary embedding of Hugging Face decoders exported at bfloat16 (tests/frontend/fixtures/hf/
// *_bf16.json: cos/sin from `inv_freq @ position_ids` in float32, cast to bfloat16, then
// x * cos + rotate_half(x) * sin with every op rounding to bfloat16) reaches rotary_embedding, the
// frequencies' outer product is a mul and the per-layer `arange(1) + cache_position` chains are
// views of the position. Proved bitwise: each fixture, with random bf16 weights, is compiled once
// with those rewrites and once without, and both run on fresh draws (tokens, positions across
// the whole cache, weights, cache contents, inv_freq of both signs); every output and the final
// contents of every cache must be equal, and equal to the eager interpreter's.
#include <gtest/gtest.h>

#include "compiler/hf_fixtures.h"
#include "compiler/qkv_rotary_graph.h"
#include "compiler/rewrite_differential.h"
#include "frontend/graph_json.h"
#include "ir/builder.h"

namespace inplace::testing {
namespace {

const std::string kHf = std::string(INPLACE_SOURCE_DIR) + "/tests/frontend/fixtures/hf/";
const std::vector<std::string> kRewrites = {"fuse_rotary", "outer_product_matmul",
                                            "fold_position_arithmetic", "fuse_rotary_table"};

// Token ids below the vocabulary (128), positions below the cache length (64, every one of them
// over the draws), cumulative lengths 0, floats in [-1, 1] at each placeholder's dtype.
std::vector<Tensor> draw(const Graph& g, uint32_t seed) {
  return rotary_draw(g, seed, (seed * 23) % 64);
}

std::unique_ptr<Graph> fixture(const std::string& model) {
  return hf_fixture(model + "_bf16");
}

TEST(HfBf16Rotary, FixturesBitwiseWithAndWithoutTheRewrites) {
  for (const char* model : {"llama", "mistral", "gemma", "qwen2"}) {
    SCOPED_TRACE(model);
    auto g = fixture(model);
    std::vector<std::vector<Tensor>> draws;
    for (uint32_t s = 0; s < 8; ++s)
      draws.push_back(draw(*g, s * 3 + 1));  // positions 23, 28, .., 58
    draws.push_back(draw(*g, 0));            // position 0
    draws.push_back(draw(*g, 25));           // position 63
    const std::string plan = expect_rewrite_exact(*g, draws[1], draws, kRewrites, 0);
    EXPECT_EQ(count_of(plan, "= rotary_embedding("), 4) << plan;  // q and k of two layers
    EXPECT_EQ(count_of(plan, "= neg("), 0) << plan;
    EXPECT_EQ(count_of(plan, "= matmul("), 0) << plan;
    EXPECT_EQ(count_of(plan, "= arange("), 0) << plan;
    EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[1], draws, 0), static_cast<int>(draws.size()));
  }
}

// The same Llama at float16 (the bf16 fixture with its dtype renamed): fp16 rounds where the
// chain rounds, too.
TEST(HfBf16Rotary, LlamaAtFloat16Bitwise) {
  auto g = hf_fixture_at_float16("llama_bf16", "llama_fp16");
  std::vector<std::vector<Tensor>> draws;
  for (uint32_t s = 0; s < 6; ++s) draws.push_back(draw(*g, s * 5 + 2));
  const std::string plan = expect_rewrite_exact(*g, draws[0], draws, kRewrites, 0);
  EXPECT_EQ(lines_with(plan, "= rotary_embedding(", "float16"), 4) << plan;
  EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 0), 6);
}

// Phi-3 (float32 fixture) rotates q[..., :rd] and cats q[..., rd:] back on; at rd == d the tail
// is empty and the cat goes with the rotate-half chain.
TEST(HfBf16Rotary, Phi3RotaryAndItsEmptyPassThrough) {
  auto g = read_graph_json(kHf + "phi3.json");
  std::vector<std::vector<Tensor>> draws;
  for (uint32_t s = 0; s < 6; ++s) draws.push_back(draw(*g, s * 7 + 1));
  const std::string plan = expect_rewrite_exact(*g, draws[0], draws, kRewrites, 0);
  EXPECT_EQ(count_of(plan, "= rotary_embedding("), 4) << plan;
  EXPECT_EQ(count_of(plan, "= cat("), 0) << plan;  // cat(freqs, freqs) is in the rotary tables
  // Against eager within float32 rounding: rms_norm keeps its statistics in double.
  EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 1e-5), 6);
}

// A partial rotary (Phi-3 with partial_rotary_factor < 1: the first rd of d columns rotated, the
// rest passed through): the rotated slice fuses, the cat stays; bitwise at bfloat16.
TEST(HfBf16Rotary, PartialRotaryFusesTheRotatedSlice) {
  GraphBuilder b("partial");
  const DType bf = DType::kBFloat16;
  Node* q = b.set_meta(b.placeholder("q"), {1, 4, 3, 16}, bf);
  Node* cos = b.set_meta(b.placeholder("cos"), {1, 1, 3, 8}, bf);
  Node* sin = b.set_meta(b.placeholder("sin"), {1, 1, 3, 8}, bf);
  auto call = [&](const char* t, std::vector<Arg> a) { return b.call_function(t, std::move(a)); };
  Node* rot = call("aten.slice.Tensor", {q, 3, 0, 8});
  Node* pass = call("aten.slice.Tensor", {q, 3, 8, INT64_MAX});
  Node* x1 = call("aten.slice.Tensor", {rot, 3, 0, 4});
  Node* x2 = call("aten.slice.Tensor", {rot, 3, 4, INT64_MAX});
  Node* half = call("aten.cat.default", {arg::list({call("aten.neg.default", {x2}), x1}), -1});
  Node* emb = call("aten.add.Tensor",
                   {call("aten.mul.Tensor", {rot, cos}), call("aten.mul.Tensor", {half, sin})});
  b.output(arg::tuple({call("aten.cat.default", {arg::list({emb, pass}), -1})}));
  auto g = b.build();
  std::vector<std::vector<Tensor>> draws;
  for (uint32_t s = 0; s < 4; ++s) draws.push_back(draw(*g, s + 1));
  const std::string plan = expect_rewrite_exact(*g, draws[0], draws, {"fuse_rotary"}, 0);
  EXPECT_EQ(count_of(plan, "= rotary_embedding("), 1) << plan;
  EXPECT_EQ(count_of(plan, "= neg("), 0) << plan;
  EXPECT_EQ(count_of(plan, "= cat("), 1) << plan;  // the pass-through
  EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, 0), 4);
}

TEST(HfBf16Rotary, LlamaPlanKeepsNoRotateHalf) {
  auto g = fixture("llama");
  const std::vector<Tensor> example = draw(*g, 5);
  const std::string fused = CompiledOnce(*g, example, {}).plan();
  CompileOptions off;
  off.skip_passes = kRewrites;
  const std::string unfused = CompiledOnce(*g, example, off).plan();
  // Without the rewrites: per layer two neg and two rotate-half cats; the matmul; the aranges.
  EXPECT_EQ(count_of(unfused, "= neg("), 4) << unfused;
  EXPECT_EQ(count_of(unfused, "= matmul("), 1) << unfused;
  EXPECT_GT(count_of(unfused, "= arange("), 0) << unfused;
  // With them: no cat (the frequencies' cat(freqs, freqs) is in the two rotary tables).
  EXPECT_EQ(count_of(fused, "= cat("), 0) << fused;
  EXPECT_EQ(lines_with(fused, "= rotary_table(", "bfloat16"), 2) << fused;
  EXPECT_EQ(count_of(fused, "= neg("), 0) << fused;
  EXPECT_EQ(lines_with(fused, "= rotary_embedding(", "bfloat16"), 4) << fused;
}

// As a GPU engine plans it (CUDA's fusion preferences, no fuse_pointwise): the bf16 rotaries
// join their q and k products (fuse_rotary_epilogues rounds where the rotary rounds).
TEST(HfBf16Rotary, LlamaPlanWithCudaPreferences) {
  auto g = fixture("llama");
  const std::string plan = CompiledOnce(*g, draw(*g, 2), gpu_like_options()).plan();
  EXPECT_EQ(count_of(plan, "= rotary_embedding("), 0) << plan;
  EXPECT_EQ(count_of(plan, "= neg("), 0) << plan;
  EXPECT_EQ(count_of(plan, "= matmul("), 0) << plan;
  EXPECT_EQ(count_of(plan, "= arange("), 0) << plan;
}

// a [.., M, 1] @ b [.., 1, N] is a * b + 0, bitwise, including the sign of a zero product
// (-1 * +0 is -0; the matmul's sum from zero makes it +0) and at bfloat16; a matmul whose inner
// dim is not 1 keeps its matmul.
std::unique_ptr<Graph> outer_graph(DType dt, int64_t k) {
  GraphBuilder b("outer");
  Node* a = b.set_meta(b.placeholder("a"), {1, 6, k}, dt);
  Node* p = b.set_meta(b.placeholder("p"), {1, k, 3}, DType::kInt64);
  Node* pf = b.call_function("aten.to.dtype", {p, dt});
  Node* m = b.call_function("aten.matmul.default", {a, pf});
  b.output(arg::tuple({b.call_function("aten.sin.default", {m}), m}));
  return b.build();
}

TEST(HfBf16Rotary, OuterProductMatmulIsBitwise) {
  for (DType dt : {DType::kFloat32, DType::kBFloat16})
    for (int64_t k : {1, 2}) {
      SCOPED_TRACE(str_cat(dtype_name(dt), " k ", k));
      auto g = outer_graph(dt, k);
      std::vector<std::vector<Tensor>> draws;
      for (uint32_t s = 0; s < 4; ++s) {
        Tensor p = Tensor::zeros({1, k, 3}, DType::kInt64);
        for (int64_t i = 1; i < p.numel(); ++i) p.data<int64_t>()[i] = (s * 7 + i * 5) % 64;
        draws.push_back({seeded_uniform({1, 6, k}, s + 1).to(dt), p});  // p[0] = 0: zeros
      }
      const std::string plan =
          expect_rewrite_exact(*g, draws[0], draws, {"outer_product_matmul"}, 0);
      EXPECT_EQ(count_of(plan, "= matmul("), k == 1 ? 0 : 1) << plan;
      CompiledOnce with(*g, draws[0], {});
      CompileOptions off;
      off.skip_passes = {"outer_product_matmul"};
      CompiledOnce without(*g, draws[0], off);
      for (const auto& d : draws) {  // the sign of zero too
        const Tensor x = with.call(d).outputs[1].to(DType::kFloat32);
        const Tensor y = without.call(d).outputs[1].to(DType::kFloat32);
        for (int64_t i = 0; i < x.numel(); ++i)
          EXPECT_EQ(std::signbit(x.data<float>()[i]), std::signbit(y.data<float>()[i])) << i;
      }
    }
}

}  // namespace
}  // namespace inplace::testing
