// The built-in Llama-style model at `tiny` size: prefill + decode through the aliased and the
// copy-back engines equal the eager interpreter step by step (logits and every cache), the
// aliased engine writes the caller's caches in place (same address), and both engines choose
// the same tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "compiler/compile.h"
#include "engine/engine.h"

#include "models/llama.h"
#include "models/llama_runner.h"
#include "test_util.h"

namespace inplace::models {
using namespace inplace::testing;
namespace {

constexpr int64_t kSMax = 24, kPrompt = 5, kSteps = 12;
const std::vector<int64_t> kPromptTokens{3, 141, 59, 26, 53};

TEST(Llama, PrefillAndDecodeEqualEagerStepByStep) {
  const LlamaConfig c = llama_config("tiny", kSMax, 7);
  const LlamaWeights w = llama_weights(c);
  LlamaEagerRunner eager(c, w, kPrompt, llama_new_caches(c));
  LlamaEngineRunner aliased(c, compile_llama(c, w, kPrompt, /*alias=*/true), llama_new_caches(c));
  LlamaEngineRunner copy_back(c, compile_llama(c, w, kPrompt, /*alias=*/false),
                              llama_new_caches(c));
  std::vector<const void*> addresses;
  for (const Tensor& t : aliased.caches()) addresses.push_back(t.data_ptr());

  auto check = [&](const Tensor& ref, const Tensor& a, const Tensor& cb, const std::string& at) {
    EXPECT_EQ(a.shape(), (Shape{1, c.vocab})) << at;
    EXPECT_TRUE(tensor_equal(a, ref, 1e-5)) << "aliased logits at " << at;
    EXPECT_TRUE(tensor_equal(cb, ref, 1e-5)) << "copy-back logits at " << at;
    for (size_t i = 0; i < eager.caches().size(); ++i) {
      EXPECT_TRUE(tensor_equal(aliased.caches()[i], eager.caches()[i], 1e-5))
          << "aliased cache " << i << " at " << at;
      EXPECT_TRUE(tensor_equal(copy_back.caches()[i], eager.caches()[i], 1e-5))
          << "copy-back cache " << i << " at " << at;
    }
  };
  Tensor ref = eager.prefill(kPromptTokens);
  Tensor a = aliased.prefill(kPromptTokens), cb = copy_back.prefill(kPromptTokens);
  check(ref, a, cb, "prefill");
  int64_t token = argmax_token(a);
  std::vector<int64_t> tokens;
  for (int64_t pos = kPrompt; pos < kPrompt + kSteps; ++pos) {
    ref = eager.decode(token, pos);
    a = aliased.decode(token, pos);
    cb = copy_back.decode(token, pos);
    check(ref, a, cb, "decode position " + std::to_string(pos));
    EXPECT_EQ(argmax_token(a), argmax_token(cb)) << "tokens differ at " << pos;
    EXPECT_EQ(argmax_token(a), argmax_token(ref)) << "tokens differ from eager at " << pos;
    token = argmax_token(a);
    tokens.push_back(token);
  }
  for (size_t i = 0; i < addresses.size(); ++i)
    EXPECT_EQ(aliased.caches()[i].data_ptr(), addresses[i]) << "cache " << i << " moved";
  // Positions past the prompt are filled, the rest still zero.
  const Tensor& k0 = aliased.caches()[0];
  EXPECT_NE(k0.at(0), 0.0);
  EXPECT_EQ(k0.at((kPrompt + kSteps) * c.head_dim()), 0.0);
  // A random model does not emit one token forever (the test would then prove little).
  EXPECT_GT(std::set<int64_t>(tokens.begin(), tokens.end()).size(), 1u);
}

TEST(Llama, DecodeReadsOnlyTheFilledPrefix) {
  // Garbage past the current position must not change the logits: attention reads
  // cache[:, :, :pos+1] only.
  const LlamaConfig c = llama_config("tiny", kSMax, 3);
  const LlamaWeights w = llama_weights(c);
  LlamaEngines e = compile_llama(c, w, kPrompt, true);
  std::vector<Tensor> clean = llama_new_caches(c), dirty = llama_new_caches(c);
  for (const Tensor& t : dirty) t.fill(Scalar(1e3));
  LlamaEngineRunner r1(c, e, clean), r2(c, e, dirty);
  r1.prefill(kPromptTokens);
  r2.prefill(kPromptTokens);
  EXPECT_TRUE(tensor_equal(r1.decode(7, kPrompt), r2.decode(7, kPrompt), 0));
}

TEST(Llama, TwoThreadsGiveTheSameLogitsAsOne) {
  // Threads split a GEMV's output columns, so every sum is added in the same order: bit-exact.
  const LlamaConfig c = llama_config("tiny", kSMax, 5);
  const LlamaWeights w = llama_weights(c);
  LlamaEngines e = compile_llama(c, w, kPrompt, true);
  LlamaEngineRunner one(c, e, llama_new_caches(c), 1), two(c, e, llama_new_caches(c), 2);
  EXPECT_TRUE(tensor_equal(one.prefill(kPromptTokens), two.prefill(kPromptTokens), 0));
  for (int64_t pos = kPrompt; pos < kPrompt + 4; ++pos)
    EXPECT_TRUE(tensor_equal(one.decode(9, pos), two.decode(9, pos), 0)) << pos;
  for (size_t i = 0; i < one.caches().size(); ++i)
    EXPECT_TRUE(tensor_equal(one.caches()[i], two.caches()[i], 0));
}

// Steps of `engine` running op `name`.
int count_steps(const Engine& engine, const std::string& name) {
  int n = 0;
  for (const Step& s : engine.plan().steps) n += s.op && s.op->schema.name == name;
  return n;
}

// fused_linear steps with (or without) a residual epilogue.
int count_linears(const Engine& engine, bool with_residual) {
  int n = 0;
  for (const Step& s : engine.plan().steps)
    n += s.op && s.op->schema.name == "fused_linear" &&
         (s.args.size() > 3 && !s.args[3].is_none()) == with_residual;
  return n;
}

TEST(Llama, Bf16WeightsEqualEagerAndStayCloseToFloat32) {
  // The engine reads the bf16 weights directly (fuse_weight_casts); eager widens them with
  // w.to(float32) on every call. Widening is exact, so the two agree to float32 rounding.
  const LlamaConfig c = llama_config("tiny", kSMax, 7, DType::kBFloat16);
  const LlamaWeights w = llama_weights(c);
  LlamaEngines e = compile_llama(c, w, kPrompt, true);
  // Decode: q, k, v and the LM head alone; o_proj and down_proj with the residual add, gate and
  // up with silu * mul in gated_mlp (fuse_linear_epilogues). The prompt keeps its seven matmuls a
  // layer.
  EXPECT_EQ(count_linears(*e.decode, false), 3 * c.n_layers + 1);
  EXPECT_EQ(count_linears(*e.decode, true), 2 * c.n_layers);
  EXPECT_EQ(count_steps(*e.decode, "gated_mlp"), c.n_layers);
  EXPECT_EQ(count_steps(*e.decode, "silu"), 0);
  // pos[-1] + 1, the filled prefix's end, only defines a runtime scalar: no step (dead_steps).
  EXPECT_EQ(count_steps(*e.decode, "add"), 0);
  EXPECT_EQ(count_steps(*e.decode, "mul"), 0);
  EXPECT_EQ(count_steps(*e.prefill, "fused_linear"), 7 * c.n_layers + 1);
  EXPECT_EQ(count_steps(*e.decode, "linear"), 0);
  // The embedded row is widened as it is read: no cast step.
  EXPECT_EQ(count_steps(*e.decode, "to"), 0);
  EXPECT_EQ(count_steps(*e.decode, "fused_embedding"), 1);
  EXPECT_EQ(count_steps(*e.prefill, "to"), 0);
  LlamaEngineRunner engine(c, e, llama_new_caches(c));
  LlamaEagerRunner eager(c, w, kPrompt, llama_new_caches(c));
  const LlamaConfig cf = llama_config("tiny", kSMax, 7);
  LlamaEngineRunner f32(cf, compile_llama(cf, llama_weights(cf), kPrompt, true),
                        llama_new_caches(cf));
  EXPECT_TRUE(tensor_equal(engine.prefill(kPromptTokens), eager.prefill(kPromptTokens), 1e-5));
  f32.prefill(kPromptTokens);
  for (int64_t pos = kPrompt; pos < kPrompt + 6; ++pos) {
    Tensor a = engine.decode(11, pos), ref = eager.decode(11, pos), full = f32.decode(11, pos);
    EXPECT_TRUE(tensor_equal(a, ref, 1e-5)) << pos;
    // Stated tolerance against float32 weights: 5% of the largest logit.
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      scale = std::max(scale, std::fabs(full.at(i)));
      worst = std::max(worst, std::fabs(a.at(i) - full.at(i)));
    }
    EXPECT_LE(worst, 0.05 * scale) << pos;
    EXPECT_GT(worst, 0.0) << "bf16 weights should round somewhere";
  }
  for (size_t i = 0; i < engine.caches().size(); ++i)
    EXPECT_TRUE(tensor_equal(engine.caches()[i], eager.caches()[i], 1e-5));
}

// merge_sibling_linears (on for GPU engines), forced on for a cpu engine: q, k and v of every
// layer are one product over the stacked weights, the separate weights are gone from the engine,
// and prefill + decode stay bit for bit the unmerged engine's (the same dot products) and equal
// the eager interpreter.
TEST(Llama, MergedQkvProductsEqualTheSeparateOnesBitForBit) {
  const LlamaConfig c = llama_config("tiny", kSMax, 7, DType::kBFloat16);
  const LlamaWeights w = llama_weights(c);
  LlamaEngines plain = compile_llama(c, w, kPrompt, true);
  CompileOptions o;
  o.merge_sibling_linears = true;
  LlamaEngines merged{plain.prefill,
                      compile(*llama_decode_graph(c, w), llama_example_inputs(c, 1), o).engine};
  // Per layer: q/k/v merged (1), o_proj and down_proj with their residual (fused), gate/up in
  // gated_mlp; the LM head alone.
  EXPECT_EQ(count_linears(*merged.decode, false), c.n_layers + 1);
  EXPECT_EQ(count_linears(*plain.decode, false), 3 * c.n_layers + 1);
  EXPECT_EQ(merged.decode->weight_bytes(), plain.decode->weight_bytes());  // no weight held twice
  LlamaEngineRunner a(c, plain, llama_new_caches(c)), b(c, merged, llama_new_caches(c));
  LlamaEagerRunner eager(c, w, kPrompt, llama_new_caches(c));
  const Tensor prompt_logits = b.prefill(kPromptTokens);
  EXPECT_TRUE(tensor_equal(a.prefill(kPromptTokens), prompt_logits, 0.0));
  EXPECT_TRUE(tensor_equal(prompt_logits, eager.prefill(kPromptTokens), 1e-5));
  for (int64_t pos = kPrompt; pos < kPrompt + 6; ++pos) {
    const Tensor got = b.decode(5 + pos, pos);
    EXPECT_TRUE(tensor_equal(a.decode(5 + pos, pos), got, 0.0)) << pos;
    EXPECT_TRUE(tensor_equal(got, eager.decode(5 + pos, pos), 1e-5)) << pos;
  }
  for (size_t i = 0; i < a.caches().size(); ++i) {
    EXPECT_TRUE(tensor_equal(a.caches()[i], b.caches()[i], 0.0)) << i;
    EXPECT_TRUE(tensor_equal(b.caches()[i], eager.caches()[i], 1e-5)) << i;
  }
}

// fuse_norm_prologues and fuse_rotary_epilogues (on for GPU engines, after the q/k/v merge),
// forced on for a cpu engine: each layer's two norms join the products they feed (the merged
// q/k/v, gate/up; the final norm the LM head, through h[:, -1]), the rotary of q and k is the
// merged product's epilogue, and prefill + decode stay bit for bit the unfused engine's (on the
// cpu the fused step is the chain) and equal the eager interpreter.
TEST(Llama, NormProloguesJoinTheirProductsBitForBit) {
  const LlamaConfig c = llama_config("tiny", kSMax, 7, DType::kBFloat16);
  const LlamaWeights w = llama_weights(c);
  CompileOptions merged_only;
  merged_only.merge_sibling_linears = true;
  CompileOptions both = merged_only;
  both.fuse_norm_prologues = true;
  const auto graph = llama_decode_graph(c, w);
  LlamaEngines prefill = compile_llama(c, w, kPrompt, true);
  LlamaEngines plain{prefill.prefill,
                     compile(*graph, llama_example_inputs(c, 1), merged_only).engine};
  LlamaEngines fused{prefill.prefill, compile(*graph, llama_example_inputs(c, 1), both).engine};
  // The final norm reaches the LM head through h[:, -1]: it joins the head's product too.
  EXPECT_EQ(count_steps(*fused.decode, "rms_norm"), 0);
  EXPECT_EQ(count_steps(*fused.decode, "rms_norm_linear"), c.n_layers + 1);
  EXPECT_EQ(count_steps(*fused.decode, "rms_norm_gated_mlp"), c.n_layers);
  EXPECT_EQ(count_steps(*plain.decode, "rms_norm"), 2 * c.n_layers + 1);
  EXPECT_EQ(count_steps(*fused.decode, "rotary_embedding"), 0);
  EXPECT_EQ(count_steps(*plain.decode, "rotary_embedding"), 2 * c.n_layers);
  LlamaEngineRunner a(c, plain, llama_new_caches(c)), b(c, fused, llama_new_caches(c));
  LlamaEagerRunner eager(c, w, kPrompt, llama_new_caches(c));
  a.prefill(kPromptTokens);
  b.prefill(kPromptTokens);
  eager.prefill(kPromptTokens);
  for (int64_t pos = kPrompt; pos < kSMax; pos += 3) {  // positions across the cache
    const Tensor got = b.decode(7 + pos, pos);
    EXPECT_TRUE(tensor_equal(a.decode(7 + pos, pos), got, 0.0)) << pos;
    EXPECT_TRUE(tensor_equal(got, eager.decode(7 + pos, pos), 1e-5)) << pos;
  }
  for (size_t i = 0; i < a.caches().size(); ++i) {
    EXPECT_TRUE(tensor_equal(a.caches()[i], b.caches()[i], 0.0)) << i;
    EXPECT_TRUE(tensor_equal(b.caches()[i], eager.caches()[i], 1e-5)) << i;
  }
}

// Without the q/k/v merge the input norm has three readers: it joins each of them, and q's and
// k's rotaries join their own products' epilogues (each reads its whole product); the
// post-attention norm still joins gate/up, and the final norm the LM head.
TEST(Llama, NormPrologueJoinsEachReader) {
  const LlamaConfig c = llama_config("tiny", kSMax, 7, DType::kBFloat16);
  const LlamaWeights w = llama_weights(c);
  CompileOptions o;
  o.merge_sibling_linears = false;
  o.fuse_norm_prologues = true;
  LlamaEngines e = compile_llama(c, w, kPrompt, true);
  e.decode = compile(*llama_decode_graph(c, w), llama_example_inputs(c, 1), o).engine;
  // Without the merge the input norm has three readers (q, k, v): it joins each of them.
  EXPECT_EQ(count_steps(*e.decode, "rms_norm"), 0);
  EXPECT_EQ(count_steps(*e.decode, "rms_norm_gated_mlp"), c.n_layers);
  EXPECT_EQ(count_steps(*e.decode, "rms_norm_linear"), 3 * c.n_layers + 1);  // and the LM head
  EXPECT_EQ(count_steps(*e.decode, "rotary_embedding"), 0);
  LlamaEngineRunner a(c, e, llama_new_caches(c));
  LlamaEagerRunner eager(c, w, kPrompt, llama_new_caches(c));
  a.prefill(kPromptTokens);
  eager.prefill(kPromptTokens);
  for (int64_t pos = kPrompt; pos < kPrompt + 4; ++pos)
    EXPECT_TRUE(tensor_equal(a.decode(3 + pos, pos), eager.decode(3 + pos, pos), 1e-5)) << pos;
}

TEST(Llama, RmsNormAndRotaryChainsAreFusedIntoOneStepEach) {
  const LlamaConfig c = llama_config("tiny", kSMax, 1);
  LlamaEngines e = compile_llama(c, llama_weights(c), kPrompt, true);
  for (const Engine* engine : {e.prefill.get(), e.decode.get()}) {
    EXPECT_EQ(count_steps(*engine, "rms_norm"), 2 * c.n_layers + 1);
    EXPECT_EQ(count_steps(*engine, "rsqrt"), 0);
    EXPECT_EQ(count_steps(*engine, "pow"), 0);
    // Every layer's q and k: later layers' x is typed through the earlier fused steps.
    const int rotary = count_steps(*engine, "rotary_embedding");
    EXPECT_EQ(rotary, 2 * c.n_layers);  // q and k of every layer
    EXPECT_EQ(count_steps(*engine, "cat"), 0);
  }
}

// Every layer's cache write (index_copy_, as StaticCache writes it) becomes kv_cache_update, the
// aliased output kind included: layers after the first read a value behind attention's runtime
// extent, whose write-back the functionalizer wraps in a same-dtype cast (an identity).
TEST(Llama, EveryLayersCacheWriteIsAKvCacheUpdate) {
  const LlamaConfig c = llama_config("tiny", kSMax, 1);
  LlamaEngines e = compile_llama(c, llama_weights(c), kPrompt, true);
  for (const Engine* engine : {e.prefill.get(), e.decode.get()}) {
    EXPECT_EQ(count_steps(*engine, "kv_cache_update"), 2 * c.n_layers);
    EXPECT_EQ(count_steps(*engine, "index_copy"), 0);
    EXPECT_EQ(count_steps(*engine, "_to_copy"), 0);
    int kv = 0;
    for (const Mutation& m : engine->aliased_io()) kv += m.kind == MutationKind::kKvCacheUpdate;
    EXPECT_EQ(kv, 2 * c.n_layers);
  }
}

// Attention over the runtime-length cache prefix returns [1, heads, 1, head_dim] whatever the
// prefix: its result is planned static, so nothing after it (projections, norms, the MLP) is
// re-planned on every call; only the steps that read the position or the prefix are.
TEST(Llama, DecodeRefreshesOnlyTheStepsThatReadRuntimeValues) {
  const LlamaConfig c = llama_config("tiny", kSMax, 1);
  LlamaEngines e = compile_llama(c, llama_weights(c), 0, true);
  const Plan& plan = e.decode->plan();
  for (const RefreshItem& r : plan.refresh) {
    if (r.kind != RefreshItem::Kind::kStep) continue;
    const Step& s = plan.steps[r.index];
    ASSERT_TRUE(s.op != nullptr);
    for (const char* name : {"linear", "rms_norm", "silu", "add", "mul", "rotary_embedding"})
      EXPECT_NE(s.op->schema.name, name) << "step '" << s.node << "' is refreshed per call";
  }
  const int attention = count_steps(*e.decode, "scaled_dot_product_attention");
  EXPECT_EQ(attention, c.n_layers);
  for (const Step& s : plan.steps)
    if (s.op && s.op->schema.name == "scaled_dot_product_attention")
      for (const TensorRef& o : s.outs) EXPECT_LT(o.dyn, 0) << s.node;
}

TEST(Llama, SizesAndErrors) {
  EXPECT_EQ(llama_config("small", 256).parameters() * 4 / 1000000, 111);  // 111 MB in f32
  const int64_t medium = llama_config("medium", 256).parameters();
  EXPECT_GT(medium, 140000000);
  EXPECT_LT(medium, 170000000);
  EXPECT_EQ(llama_config("large", 256).parameters() / 1000000, 1040);  // Llama-3.2-1B's shape
  EXPECT_TRUE(mentions(error_of([] { llama_config("huge", 256); }), {"huge", "tiny"}));
  EXPECT_EQ(llama_config("small", 256, 0, DType::kBFloat16).weight_bytes() * 2,
            llama_config("small", 256).weight_bytes() + 17 * 512 * 4);  // norms stay float32
}

}  // namespace
}  // namespace inplace::models
