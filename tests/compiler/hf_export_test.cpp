// Hugging Face decoders (Llama, Qwen2, GPT-2; random weights, a StaticCache of 64 positions) as
// torch.export in PyTorch 2.11 writes them (tests/frontend/fixtures/hf/*.json, captured by
// scripts/test_hf.py with INPLACE_HF_DUMP): each graph is compiled once and run on fresh
// tokens, positions across the whole cache, weights and cache contents; every output and the
// final contents of every cache must equal the eager interpreter's, aliased and copy-back.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/differential.h"
#include "frontend/graph_json.h"

namespace inplace::testing {
namespace {

const std::string kHf = std::string(INPLACE_SOURCE_DIR) + "/tests/frontend/fixtures/hf/";

// One value per placeholder: token ids below the vocabulary (128), positions below the cache
// length (64), cumulative lengths 0, everything else seeded floats.
std::vector<Tensor> draw(const Graph& g, uint32_t seed) {
  std::vector<Tensor> inputs;
  uint32_t x = seed * 2246822519u + 7;
  auto next = [&](int64_t n) {
    x = x * 1664525u + 1013904223u;
    return static_cast<int64_t>((x >> 8) % static_cast<uint32_t>(n));
  };
  for (Node* p : g.placeholders()) {
    const Shape& shape = *p->meta.shape;
    if (*p->meta.dtype != DType::kInt64) {
      inputs.push_back(seeded_uniform(shape, seed * 131 + static_cast<uint32_t>(inputs.size())));
      continue;
    }
    Tensor t = Tensor::zeros(shape, DType::kInt64);
    int64_t bound = p->name == "input_ids" ? 128 : p->name == "cache_position" ? 64 : 1;
    for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = next(bound);
    inputs.push_back(t);
  }
  return inputs;
}

void expect_exact(const std::string& model, double tol = 1e-5) {
  auto g = read_graph_json(kHf + model + ".json");
  std::vector<std::vector<Tensor>> draws;
  for (uint32_t seed = 1; seed <= 6; ++seed) draws.push_back(draw(*g, seed));
  int accepted = expect_engine_exact_on_draws(*g, draw(*g, 99), draws, tol);
  EXPECT_EQ(accepted, 6);
}

TEST(HfExport, LlamaStaticCacheDecodeStep) {
  expect_exact("llama");
}
TEST(HfExport, Qwen2StaticCacheDecodeStep) {
  expect_exact("qwen2");
}
TEST(HfExport, Gpt2StaticCacheDecodeStep) {
  expect_exact("gpt2");
}
// Mistral (sliding-window config), Phi-3 (fused qkv_proj and gate_up_proj), Gemma (GeGLU,
// scaled embedding, (1 + w) RMSNorm): exported on the GPU machine by scripts/test-hf.sh with
// INPLACE_HF_DUMP (transformers 5.17, torch 2.11).
TEST(HfExport, MistralStaticCacheDecodeStep) {
  expect_exact("mistral");
}
TEST(HfExport, Phi3StaticCacheDecodeStep) {
  expect_exact("phi3");
}
TEST(HfExport, GemmaStaticCacheDecodeStep) {
  expect_exact("gemma");
}
// Qwen3 (an RMSNorm of each q and k head before the rotary): exported on the GPU machine by
// scripts/hf_export_graphs.py --shape tiny --s-max 64 (transformers 5.17, torch 2.11).
TEST(HfExport, Qwen3StaticCacheDecodeStep) {
  expect_exact("qwen3");
}
// Gemma 3 (q and k norms, a norm after attention and after the MLP, sliding-window and full
// layers with their own rotary tables; the window as long as the cache): exported the same way.
// Its norms after attention and the MLP magnify a float32 rounding: 1e-4 relative.
TEST(HfExport, Gemma3StaticCacheDecodeStep) {
  expect_exact("gemma3", 1e-4);
}

}  // namespace
}  // namespace inplace::testing
