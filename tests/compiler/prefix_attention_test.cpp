// attend_filled_prefix and canonicalize_repeat_kv, each proved against the graph without it:
// the Hugging Face fixtures (tests/frontend/fixtures/hf) and small hand-built graphs are compiled
// with and without the rewrites and run on fresh inputs at every position of the cache. The
// rewritten form attends over cache[:, :, :pos+1] (a runtime extent in the plan); near misses
// (a mask that is not the causal prefix, another position, a key index along another dim) keep
// the masked form. Tolerance 1e-5: the prefix form sums the same nonzero terms (masked keys
// weigh exactly 0) in another blocking.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "compiler/rewrite_differential.h"
#include "frontend/graph_json.h"
#include "ir/builder.h"

namespace inplace::testing {
namespace {

constexpr double kTol = 1e-5;
const std::vector<std::string> kRewrites = {"canonicalize_repeat_kv", "attend_filled_prefix"};

// One value per placeholder: `pos` for every position input, ids below 128, other ints 0,
// seeded floats in [-1, 1] (weights and cache contents) in the placeholder's dtype.
std::vector<Tensor> draw(const Graph& g, int64_t pos, uint32_t seed) {
  std::vector<Tensor> inputs;
  for (Node* p : g.placeholders()) {
    const Shape& shape = *p->meta.shape;
    if (*p->meta.dtype != DType::kInt64) {
      Tensor t = seeded_uniform(shape, seed * 131 + static_cast<uint32_t>(inputs.size()));
      inputs.push_back(*p->meta.dtype == DType::kFloat32 ? t : t.to(*p->meta.dtype));
      continue;
    }
    Tensor t = Tensor::zeros(shape, DType::kInt64);
    const bool position = p->name.find("pos") != std::string::npos;
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<int64_t>()[i] = position ? pos : p->name == "input_ids" ? (seed * 37 + i) % 128 : 0;
    inputs.push_back(t);
  }
  return inputs;
}

std::vector<std::vector<Tensor>> draws_across(const Graph& g, int64_t s_max) {
  std::vector<std::vector<Tensor>> out;
  for (int64_t pos = 0; pos < s_max; pos += 7) out.push_back(draw(g, pos, 3 + pos));
  out.push_back(draw(g, s_max - 1, 1));
  return out;
}

void expect_fixture(const std::string& model, int layers, double tol = kTol) {
  auto g = read_graph_json(std::string(INPLACE_SOURCE_DIR) + "/tests/frontend/fixtures/hf/" +
                           model + ".json");
  std::string plan =
      expect_rewrite_exact(*g, draw(*g, 5, 99), draws_across(*g, 64), kRewrites, tol);
  // Each layer's key and value caches are sliced at the position's runtime extent, and no
  // attention reads a mask.
  EXPECT_EQ(count_of(plan, "[view, refresh only]"), 2 * layers) << plan;
  EXPECT_EQ(count_of(plan, "[cache_position + 1]"), 2 * layers) << plan;
  EXPECT_EQ(lines_with(plan, "= scaled_dot_product_attention(", ":bool"), 0) << plan;
  // And the compiled program still equals the eager interpreter on the unrewritten graph.
  EXPECT_EQ(expect_engine_exact_on_draws(*g, draw(*g, 5, 99), draws_across(*g, 64), tol), 11);
}

TEST(PrefixAttention, LlamaFixtureAttendsOverTheFilledPrefix) {
  expect_fixture("llama", 2);
}
TEST(PrefixAttention, Qwen2FixtureAttendsOverTheFilledPrefix) {
  expect_fixture("qwen2", 2);
}
TEST(PrefixAttention, Gpt2FixtureAttendsOverTheFilledPrefix) {
  expect_fixture("gpt2", 2);
}
// Gemma 3: a sliding-window layer (mask `j > p - 64 & j <= p`, the window as long as its cache
// of 64 slots) and a full one. Its norms after attention and after the MLP scale a small
// output up to the residual's size, so a float32 rounding of attention's sum (the prefix form
// blocks it otherwise) reaches the logits magnified: 1e-4 relative.
TEST(PrefixAttention, Gemma3SlidingWindowFixtureAttendsOverTheFilledPrefix) {
  expect_fixture("gemma3", 2, 1e-4);
}

// The same graph with a window of 16 keys over the 64 slots (`j > p - 16`): keys before the
// window are masked at positions past it, so the sliding layer attends over the last 16 keys of
// the prefix (attention's window), the full layer over the prefix; both without a mask, equal to
// the graph without the rewrite at every position.
TEST(PrefixAttention, Gemma3WindowShorterThanTheCacheAttendsOverTheWindow) {
  std::ifstream in(std::string(INPLACE_SOURCE_DIR) + "/tests/frontend/fixtures/hf/gemma3.json");
  std::stringstream text;
  text << in.rdbuf();
  std::string json = text.str();
  const std::string window = R"("args":[{"node":"unsqueeze_21"},64])";
  const size_t at = json.find(window);
  ASSERT_NE(at, std::string::npos);
  json.replace(at, window.size(), R"("args":[{"node":"unsqueeze_21"},16])");
  auto g = read_graph_json_string(json, "gemma3_window16");
  std::string plan =
      expect_rewrite_exact(*g, draw(*g, 5, 99), draws_across(*g, 64), kRewrites, 1e-4);
  EXPECT_EQ(count_of(plan, "[cache_position + 1]"), 4) << plan;
  EXPECT_EQ(lines_with(plan, "= scaled_dot_product_attention(", ":bool"), 0) << plan;
  EXPECT_EQ(count_of(plan, "= le.Tensor("), 0) << plan;  // no mask computed
  EXPECT_EQ(expect_engine_exact_on_draws(*g, draw(*g, 5, 99), draws_across(*g, 64), 1e-4), 11);
}

// python/bench/hf_style_cpu.py's module (2 layers, d_model 64, 4 heads, 2 kv heads, s_max 32)
// as inplace.compile captures it under torch 1.13 (make_fx): attention written out (bmm over
// views, masked_fill(~mask, -inf), _softmax, bmm) with repeat_kv as full slices, unsqueeze,
// expand, clone. recognize_attention makes it attention, and the prefix rewrite follows.
std::string make_fx_fixture(const char* file = "hf_style_make_fx.json") {
  std::ifstream in(std::string(INPLACE_SOURCE_DIR) + "/tests/compiler/fixtures/" + file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const std::vector<std::string> kAttentionRewrites = {
    "recognize_attention", "canonicalize_repeat_kv", "attend_filled_prefix"};

TEST(PrefixAttention, MakeFxAttentionIsRecognizedAndAttendsOverThePrefix) {
  auto g = read_graph_json_string(make_fx_fixture(), "hf_style_make_fx");
  std::string plan =
      expect_rewrite_exact(*g, draw(*g, 5, 99), draws_across(*g, 32), kAttentionRewrites, kTol);
  EXPECT_EQ(count_of(plan, "[cache_position + 1]"), 4) << plan;
  // No bmm left: the rotary table's inv_freq @ position is a mul (outer_product_matmul).
  EXPECT_EQ(count_of(plan, "= bmm("), 0) << plan;
  EXPECT_EQ(count_of(plan, "= clone("), 0) << plan;  // no repeat_kv copy of a cache
  // And the norms and rotary embeddings after the first attention still fuse.
  EXPECT_EQ(count_of(plan, "= rms_norm("), 5) << plan;
  EXPECT_EQ(count_of(plan, "= rotary_embedding("), 4) << plan;
  EXPECT_EQ(expect_engine_exact_on_draws(*g, draw(*g, 5, 99), draws_across(*g, 32), kTol), 6);
}

// The same module in bfloat16 (tests/compiler/fixtures/make_hf_style.py): the chain rounds each
// product, the scaling and the softmax to bf16, and rounded_attention keeps those roundings, so
// over the filled prefix (no repeat_kv copy, no mask) it is bitwise the chain over the whole
// masked cache, at every position, against the graph without the rewrites and the eager
// interpreter alike.
TEST(PrefixAttention, MakeFxBf16AttentionKeepsTheChainsRoundingsOverThePrefix) {
  auto g = read_graph_json_string(make_fx_fixture("hf_style_make_fx_bf16.json"), "bf16");
  std::string plan =
      expect_rewrite_exact(*g, draw(*g, 5, 99), draws_across(*g, 32), kAttentionRewrites, 0.0);
  EXPECT_EQ(count_of(plan, "= rounded_attention("), 2) << plan;
  EXPECT_EQ(count_of(plan, "[cache_position + 1]"), 4) << plan;
  EXPECT_EQ(lines_with(plan, "= rounded_attention(", ":bool"), 0) << plan;
  EXPECT_EQ(count_of(plan, "= bmm("), 0) << plan;
  EXPECT_EQ(count_of(plan, "= clone("), 0) << plan;
  EXPECT_EQ(count_of(plan, "= _softmax("), 0) << plan;
  EXPECT_EQ(expect_engine_exact_on_draws(*g, draw(*g, 5, 99), draws_across(*g, 32), 0.0), 6);
}

// An attention layer as torch.fx records it (tests/compiler/fixtures/make_hf_style.py): the
// products as matmul of the 4-D operands, repeat_kv's unsqueeze as k[:, :, None], the mask's
// unit dims and cache_position[:, None] as getitem, torch.arange(s_max) a constant in the graph.
// The same rewrites apply as to make_fx's spelling: float32 within the kernel's rounding,
// bfloat16 bitwise the chain.
TEST(PrefixAttention, TorchFxAttentionIsRecognizedAndAttendsOverThePrefix) {
  for (const char* file : {"attention_torch_fx.json", "attention_torch_fx_bf16.json"}) {
    auto g = read_graph_json_string(make_fx_fixture(file), file);
    const bool half = std::string(file).find("bf16") != std::string::npos;
    const double tol = half ? 0.0 : kTol;
    std::string plan =
        expect_rewrite_exact(*g, draw(*g, 5, 99), draws_across(*g, 32), kAttentionRewrites, tol);
    const char* attention = half ? "= rounded_attention(" : "= scaled_dot_product_attention(";
    EXPECT_EQ(count_of(plan, attention), 1) << plan;
    EXPECT_EQ(lines_with(plan, attention, ":bool"), 0) << plan;  // no mask: the prefix
    EXPECT_EQ(count_of(plan, "[cache_position + 1]"), 2) << plan;
    EXPECT_EQ(count_of(plan, "= matmul("), 0) << plan;
    EXPECT_EQ(count_of(plan, "[1,4,32,16]"), 0) << plan;  // no repeat_kv copy of a cache
    EXPECT_EQ(expect_engine_exact_on_draws(*g, draw(*g, 5, 99), draws_across(*g, 32), tol), 6)
        << file;
  }
}

// Where the prefix cannot be proved (here: attend_filled_prefix skipped), rounded_attention
// keeps the mask over the whole cache: bitwise the chain too.
TEST(PrefixAttention, MakeFxBf16MaskedAttentionKeepsTheChainsRoundings) {
  auto g = read_graph_json_string(make_fx_fixture("hf_style_make_fx_bf16.json"), "bf16");
  CompileOptions masked;
  masked.skip_passes = {"attend_filled_prefix"};
  CompiledOnce with_mask(*g, draw(*g, 5, 99), masked), chain(*g, draw(*g, 5, 99), [] {
    CompileOptions o;
    o.skip_passes = kAttentionRewrites;
    return o;
  }());
  EXPECT_EQ(lines_with(with_mask.plan(), "= rounded_attention(", ":bool"), 2) << with_mask.plan();
  expect_engines_equal(with_mask, chain, draws_across(*g, 32), 0.0);
}

// A backend without rounded_attention's kernel (here CUDA's fusion choices: the chain's bmm is
// cuBLAS's there, which no other kernel reproduces bit for bit) keeps the chain: no
// rounded_attention in the plan, and the engine still equals the graph without the rewrites.
TEST(PrefixAttention, MakeFxBf16ChainStaysWhereTheBackendHasNoRoundedAttention) {
  auto g = read_graph_json_string(make_fx_fixture("hf_style_make_fx_bf16.json"), "bf16");
  CompileOptions cuda_fusions;
  cuda_fusions.fusion_device = DeviceType::kCuda;
  CompiledOnce engine(*g, draw(*g, 5, 99), cuda_fusions);
  EXPECT_EQ(count_of(engine.plan(), "= rounded_attention("), 0) << engine.plan();
  EXPECT_EQ(count_of(engine.plan(), "= bmm("), 4) << engine.plan();
  EXPECT_EQ(
      expect_engine_exact_on_draws(*g, draw(*g, 5, 99), draws_across(*g, 32), 0.0, cuda_fusions),
      6);
}

TEST(PrefixAttention, MakeFxNearMissesAreNotAttention) {
  // A finite fill is not -inf: masked keys would weigh exp(-1e4 - max), not 0.
  std::string finite = make_fx_fixture();
  for (size_t at; (at = finite.find(R"({"float":"-inf"})")) != std::string::npos;)
    finite.replace(at, 16, "-10000.0");
  // A softmax over another dim is not attention's.
  std::string other_dim = make_fx_fixture();
  for (size_t at; (at = other_dim.find(R"("},-1,false])")) != std::string::npos;)
    other_dim.replace(at, 12, R"("},2,false])");
  for (const std::string& text : {finite, other_dim}) {
    auto g = read_graph_json_string(text, "near_miss");
    std::string plan =
        expect_rewrite_exact(*g, draw(*g, 5, 99), draws_across(*g, 32), kAttentionRewrites, kTol);
    EXPECT_EQ(count_of(plan, "= scaled_dot_product_attention("), 0) << plan;
    EXPECT_EQ(count_of(plan, "= bmm("), 4) << plan;  // attention's (the rotary table's is a mul)
    EXPECT_EQ(expect_engine_exact_on_draws(*g, draw(*g, 5, 99), draws_across(*g, 32), kTol), 6);
  }
}

// The mask a hand-built decode step attends under.
enum class MaskForm {
  kLe,             // arange(s) <= pos: the causal prefix (rewritten)
  kGeSwapped,      // pos >= arange(s) (rewritten)
  kLtNext,         // arange(s) < pos + 1 (rewritten)
  kOffsetKeys,     // arange(s) + 0 <= arange(1) + pos, views between (rewritten)
  kLt,             // arange(s) < pos: the own position masked too (kept)
  kGe,             // arange(s) >= pos: not a prefix (kept)
  kOtherPosition,  // arange(s) <= pos2, another input than the write position (kept)
  kHeadsDim,       // the index runs along the heads dim, not the keys (kept)
  kWindow,         // ones & (arange(s) > pos - s) & (arange(s) <= pos): a window of s (rewritten)
  kWideWindow,     // (pos - s - 3 < arange(s)) & (pos >= arange(s)): a longer window (rewritten)
  kShortWindow,    // (arange(s) >= pos - 5) & (arange(s) <= pos): the last 6 keys (rewritten)
  kWindowOther,    // (arange(s) > pos2 - s) & (arange(s) <= pos): another position (kept)
};

constexpr int64_t kS = 16;

// q [1,4,1,8]; caches [1,2,S,8] written at pos by index_copy_; attention with repeat_kv
// (unsqueeze, expand, reshape) or enable_gqa under `form`.
std::unique_ptr<Graph> decode_step(MaskForm form, bool repeat_kv) {
  GraphBuilder b("decode_step");
  auto ph = [&](const char* name, Shape s, DType t) {
    return b.set_meta(b.placeholder(name), s, t);
  };
  Node* q = ph("q", {1, 4, 1, 8}, DType::kFloat32);
  Node* k = ph("k", {1, 2, 1, 8}, DType::kFloat32);
  Node* v = ph("v", {1, 2, 1, 8}, DType::kFloat32);
  Node* kc = ph("k_cache", {1, 2, kS, 8}, DType::kFloat32);
  Node* vc = ph("v_cache", {1, 2, kS, 8}, DType::kFloat32);
  Node* pos = ph("pos", {1}, DType::kInt64);
  Node* pos2 = ph("pos2", {1}, DType::kInt64);
  auto call = [&](const char* target, std::vector<Arg> args, KwArgs kw = {}) {
    return b.call_function(target, std::move(args), std::move(kw));
  };
  Node* kw = call("aten.index_copy_.default", {kc, 2, pos, k});
  Node* vw = call("aten.index_copy_.default", {vc, 2, pos, v});
  Node* keys =
      call("aten.view.default", {call("aten.arange.default", {kS}), arg::ints({1, 1, 1, kS})});
  auto at = [&](Node* p) { return call("aten.view.default", {p, arg::ints({1, 1, 1, 1})}); };
  Node* mask = nullptr;
  switch (form) {
    case MaskForm::kLe:
      mask = call("aten.le.Tensor", {keys, at(pos)});
      break;
    case MaskForm::kGeSwapped:
      mask = call("aten.ge.Tensor", {at(pos), keys});
      break;
    case MaskForm::kLtNext:
      mask = call("aten.lt.Tensor", {keys, at(call("aten.add.Tensor", {pos, 1}))});
      break;
    case MaskForm::kOffsetKeys: {
      Node* shifted = call("aten.add.Tensor", {call("aten.arange.default", {kS}), 0});
      Node* qpos = call("aten.add.Tensor", {call("aten.arange.default", {1}), pos});
      Node* kidx = call(
          "aten.unsqueeze.default",
          {call("aten.unsqueeze.default", {call("aten.unsqueeze.default", {shifted, 0}), 0}), 0});
      mask = call("aten.expand.default",
                  {call("aten.le.Tensor", {kidx, at(qpos)}), arg::ints({1, -1, 1, kS})});
      break;
    }
    case MaskForm::kLt:
      mask = call("aten.lt.Tensor", {keys, at(pos)});
      break;
    case MaskForm::kGe:
      mask = call("aten.ge.Tensor", {keys, at(pos)});
      break;
    case MaskForm::kOtherPosition:
      mask = call("aten.le.Tensor", {keys, at(pos2)});
      break;
    case MaskForm::kWindow:
    case MaskForm::kWideWindow:
    case MaskForm::kShortWindow:
    case MaskForm::kWindowOther: {
      Node* upper = form == MaskForm::kWideWindow ? call("aten.ge.Tensor", {at(pos), keys})
                                                  : call("aten.le.Tensor", {keys, at(pos)});
      Node* lower = nullptr;
      if (form == MaskForm::kWideWindow)
        lower = call("aten.lt.Tensor", {at(call("aten.sub.Tensor", {pos, kS + 3})), keys});
      else if (form == MaskForm::kShortWindow)
        lower = call("aten.ge.Tensor", {keys, at(call("aten.sub.Tensor", {pos, 5}))});
      else
        lower = call(
            "aten.gt.Tensor",
            {keys, at(call("aten.sub.Tensor", {form == MaskForm::kWindowOther ? pos2 : pos, kS}))});
      Node* ones =
          call("aten.new_ones.default", {pos, arg::ints({})}, {{"dtype", Arg(DType::kBool)}});
      mask = call("aten.__and__.Tensor", {call("aten.__and__.Tensor", {ones, lower}), upper});
      break;
    }
    case MaskForm::kHeadsDim: {
      Node* heads =
          call("aten.view.default", {call("aten.arange.default", {4}), arg::ints({1, 4, 1, 1})});
      mask = call("aten.expand.default",
                  {call("aten.le.Tensor", {heads, at(pos)}), arg::ints({1, 4, 1, kS})});
      break;
    }
  }
  auto repeat = [&](Node* c) {
    Node* u = call("aten.unsqueeze.default", {c, 2});
    Node* e = call("aten.expand.default", {u, arg::ints({1, 2, 2, kS, 8})});
    return call("aten.reshape.default", {e, arg::ints({1, 4, kS, 8})});
  };
  Node* o = repeat_kv ? call("aten.scaled_dot_product_attention.default",
                             {q, repeat(kw), repeat(vw), mask}, {{"scale", 0.3}})
                      : call("aten.scaled_dot_product_attention.default", {q, kw, vw, mask},
                             {{"scale", 0.3}, {"enable_gqa", true}});
  b.output(arg::tuple({o}));
  return b.build();
}

// Runs the step at every position (pos2 one ahead for kOtherPosition, and, for the forms that
// mask the own position, from 1 so that no row is all -inf).
void expect_step(MaskForm form, bool repeat_kv, bool rewritten) {
  auto g = decode_step(form, repeat_kv);
  std::vector<std::vector<Tensor>> draws;
  for (int64_t p = 1; p < kS; ++p) {
    std::vector<Tensor> d = draw(*g, p, static_cast<uint32_t>(p));
    d[6].data<int64_t>()[0] = form == MaskForm::kOtherPosition ? (p + 3) % kS : p;
    draws.push_back(d);
  }
  if (form != MaskForm::kLt) draws.push_back(draw(*g, 0, 7));
  std::string plan = expect_rewrite_exact(*g, draws[0], draws, kRewrites, kTol);
  EXPECT_EQ(count_of(plan, "[pos + 1]"), rewritten ? 2 : 0) << plan;
  EXPECT_EQ(lines_with(plan, "= scaled_dot_product_attention(", ":bool"), rewritten ? 0 : 1)
      << plan;
  EXPECT_EQ(expect_engine_exact_on_draws(*g, draws[0], draws, kTol),
            static_cast<int>(draws.size()));
}

TEST(PrefixAttention, CausalPrefixFormsAreRewritten) {
  for (bool repeat_kv : {true, false}) {
    SCOPED_TRACE(repeat_kv ? "repeat_kv" : "enable_gqa");
    expect_step(MaskForm::kLe, repeat_kv, true);
    expect_step(MaskForm::kGeSwapped, repeat_kv, true);
    expect_step(MaskForm::kLtNext, repeat_kv, true);
    expect_step(MaskForm::kOffsetKeys, repeat_kv, true);
  }
}

TEST(PrefixAttention, SlidingWindowsAreRewritten) {
  expect_step(MaskForm::kWindow, true, true);
  expect_step(MaskForm::kWideWindow, false, true);
  expect_step(MaskForm::kShortWindow, true, true);  // attention's window of 6 keys
  expect_step(MaskForm::kShortWindow, false, true);
}

TEST(PrefixAttention, SlidingWindowNearMissesKeepTheMask) {
  expect_step(MaskForm::kWindowOther, false, false);
}

TEST(PrefixAttention, NearMissesKeepTheMask) {
  expect_step(MaskForm::kLt, true, false);
  expect_step(MaskForm::kGe, true, false);
  expect_step(MaskForm::kOtherPosition, true, false);
  expect_step(MaskForm::kHeadsDim, true, false);
}

TEST(PrefixAttention, RepeatKvBecomesGroupedAttention) {
  // The mask is not a prefix, so only the repeat_kv copy goes: no reshape of the cache is left.
  auto g = decode_step(MaskForm::kGe, true);
  std::vector<std::vector<Tensor>> draws;
  for (int64_t p = 0; p < kS; p += 3) draws.push_back(draw(*g, p, static_cast<uint32_t>(p) + 1));
  std::string with = expect_rewrite_exact(*g, draws[0], draws, {"canonicalize_repeat_kv"}, kTol);
  EXPECT_EQ(count_of(with, "= reshape("), 0) << with;
  CompiledOnce without(*g, draws[0], [] {
    CompileOptions o;
    o.skip_passes = {"canonicalize_repeat_kv"};
    return o;
  }());
  EXPECT_EQ(count_of(without.plan(), "= reshape("), 2) << without.plan();
}

TEST(PrefixAttention, OnlyOptionalRewritesCanBeSkipped) {
  auto g = decode_step(MaskForm::kLe, false);
  CompileOptions o;
  o.skip_passes = {"kv_cache_update"};
  EXPECT_THROW(compile(*g, draw(*g, 1, 1), o), Error);
}

}  // namespace
}  // namespace inplace::testing
