// The rotary embedding of Hugging Face decoders exported at bfloat16 (tests/frontend/fixtures/hf/
// *_bf16.json: cos/sin from `inv_freq @ position_ids` in float32, cast to bfloat16, then
// x * cos + rotate_half(x) * sin with every op rounding to bfloat16) reaches rotary_embedding, the
// frequencies' outer product is a mul and the per-layer `arange(1) + cache_position` chains are
// views of the position. Proved bitwise: each fixture, with random bf16 weights, is compiled once
// with those rewrites and once without, and both run on fresh draws (tokens, positions across
// the whole cache, weights, cache contents, inv_freq of both signs); every output and the final
// contents of every cache must be equal, and equal to the eager interpreter's.
#include <gtest/gtest.h>

#include "compiler/rewrite_differential.h"
#include "frontend/graph_json.h"
#include "ir/builder.h"

namespace inplace::testing {
namespace {

const std::string kHf = std::string(INPLACE_SOURCE_DIR) + "/tests/frontend/fixtures/hf/";
const std::vector<std::string> kRewrites = {"fuse_rotary", "outer_product_matmul",
                                            "fold_position_arithmetic"};

// Token ids below the vocabulary (128), positions below the cache length (64, every one of them
// over the draws), cumulative lengths 0, floats in [-1, 1] at each placeholder's dtype.
std::vector<Tensor> draw(const Graph& g, uint32_t seed) {
  std::vector<Tensor> inputs;
  for (Node* p : g.placeholders()) {
    const Shape& shape = *p->meta.shape;
    const DType dt = *p->meta.dtype;
    if (dt != DType::kInt64) {
      inputs.push_back(
          seeded_uniform(shape, seed * 131 + static_cast<uint32_t>(inputs.size())).to(dt));
      continue;
    }
    Tensor t = Tensor::zeros(shape, DType::kInt64);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<int64_t>()[i] = p->name == "input_ids"        ? (seed * 37 + i * 11) % 128
                             : p->name == "cache_position" ? (seed * 23) % 64
                                                           : 0;
    inputs.push_back(t);
  }
  return inputs;
}

std::unique_ptr<Graph> fixture(const std::string& model) {
  return read_graph_json(kHf + model + "_bf16.json");
}

TEST(HfBf16Rotary, FixturesBitwiseWithAndWithoutTheRewrites) {
  for (const char* model : {"llama", "mistral", "gemma"}) {
    SCOPED_TRACE(model);
    auto g = fixture(model);
    std::vector<std::vector<Tensor>> draws;
    for (uint32_t s = 0; s < 8; ++s) draws.push_back(draw(*g, s * 3 + 1));  // positions 23 apart
    draws.push_back(draw(*g, 0));                                           // position 0
    const std::string plan = expect_rewrite_exact(*g, draws[1], draws, kRewrites, 0);
    EXPECT_EQ(count_of(plan, "= rotary_embedding("), 4) << plan;  // q and k of two layers
    EXPECT_EQ(count_of(plan, "= neg("), 0) << plan;
    EXPECT_EQ(count_of(plan, "= matmul("), 0) << plan;
    EXPECT_EQ(count_of(plan, "= arange("), 0) << plan;
    EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[1], draws, 0), static_cast<int>(draws.size()));
  }
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
  // With them: the one cat left is the frequencies' cat(freqs, freqs).
  EXPECT_EQ(count_of(fused, "= cat("), 1) << fused;
  EXPECT_EQ(count_of(fused, "= neg("), 0) << fused;
  EXPECT_EQ(lines_with(fused, "= rotary_embedding(", "bfloat16"), 4) << fused;
}

// As a GPU engine plans it (CUDA's fusion preferences, no fuse_pointwise): the bf16 rotaries
// stay rotary_embedding steps (the rms_norm_linear epilogue rotates at float32 only).
TEST(HfBf16Rotary, LlamaPlanWithCudaPreferences) {
  auto g = fixture("llama");
  CompileOptions o;
  o.merge_sibling_linears = true;
  o.fuse_norm_prologues = true;
  o.skip_passes = {"fuse_pointwise"};
  const std::string plan = CompiledOnce(*g, draw(*g, 2), o).plan();
  EXPECT_EQ(count_of(plan, "= rotary_embedding("), 4) << plan;
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
