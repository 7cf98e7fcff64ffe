// Which steps share a launch on a GPU (kernels/cuda/launch_groups.h; built with the CUDA backend
// only), decided from the plan and the kernel table alone, so it is tested here on the cpu against
// the cuda kernel table: a decoder layer's k and v cache writes join its q/k/v product (bf16
// weights; GPT-2's c_attn) or pair up (float32 weights, cuBLAS products), the rotary table's two
// reads pair up, and temporaries pair only when their planned memory does not overlap.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "backend/kernel_table.h"
#include "compiler/compile.h"
#include "compiler/hf_fixtures.h"
#include "compiler/qkv_rotary_graph.h"
#include "frontend/graph_json.h"
#include "kernels/cuda/launch_groups.h"
#include "models/llama.h"
#include "ops/registry.h"

#ifdef INPLACE_WITH_CUDA
namespace inplace {
namespace {

// The decode engine as a GPU compile makes it (the q/k/v merge and the norm prologues on),
// compiled for the cpu: the same steps.
std::shared_ptr<const Engine> decode_engine(DType weights) {
  const models::LlamaConfig c = models::llama_config("tiny", 32, 7, weights);
  CompileOptions o;
  o.merge_sibling_linears = true;
  o.fuse_norm_prologues = true;
  return compile(*models::llama_decode_graph(c, models::llama_weights(c)),
                 models::llama_example_inputs(c, 1), o)
      .engine;
}

std::string op_of(const Step& s) {
  return s.op ? s.op->schema.name : "";
}

TEST(LaunchGroups, ALayersCacheWritesJoinItsQkvProduct) {
  auto e = decode_engine(DType::kBFloat16);
  const Plan& plan = e->plan();
  const cuda::LaunchGroups g = cuda::plan_launch_groups(plan);
  int groups = 0, pairs = 0, joined = 0;
  for (size_t q = 0; q < plan.steps.size(); ++q) {
    if (g.write_count[q] > 0) {
      ++groups;
      EXPECT_EQ(op_of(plan.steps[q]), "rms_norm_linear") << plan.steps[q].node;
      ASSERT_EQ(g.write_count[q], 2) << plan.steps[q].node;
      EXPECT_EQ(op_of(plan.steps[q + 1]), "kv_cache_update");
      EXPECT_EQ(op_of(plan.steps[q + 2]), "kv_cache_update");
      // The writes also pair, for a form the epilogue kernel refuses at run time.
      EXPECT_NE(g.pair[q + 1], nullptr);
      joined += 2;
      q += 2;
      continue;
    }
    if (g.pair[q]) {
      ++pairs;
      ++joined;
      EXPECT_EQ(op_of(plan.steps[q]), "index_select") << plan.steps[q].node;
      ++q;
    }
  }
  EXPECT_EQ(groups, 2);  // one a layer; the LM head's product has no writes after it
  EXPECT_EQ(pairs, 1);   // cos and sin
  EXPECT_EQ(joined, 5);  // what the cuda backend counts as joined_steps
}

TEST(LaunchGroups, Float32WeightsPairTheCacheWrites) {
  auto e = decode_engine(DType::kFloat32);
  const Plan& plan = e->plan();
  const cuda::LaunchGroups g = cuda::plan_launch_groups(plan);
  int kv_pairs = 0;
  for (size_t q = 0; q < plan.steps.size(); ++q) {
    EXPECT_EQ(g.write_count[q], 0) << plan.steps[q].node;  // cuBLAS products: no epilogue
    if (g.pair[q] && op_of(plan.steps[q]) == "kv_cache_update") ++kv_pairs;
  }
  EXPECT_EQ(kv_pairs, 2);
}

// A graph compiled as a GPU engine plans it, for the cpu: the same steps (GPT-2's Conv1D weights
// as they lie unless `prepare`, the cuda backend's default).
std::shared_ptr<const Engine> gpu_plan_engine(const Graph& g, bool prepare = false) {
  std::vector<Tensor> inputs;
  for (Node* p : g.placeholders()) inputs.push_back(Tensor::zeros(*p->meta.shape, *p->meta.dtype));
  CompileOptions o;
  o.merge_sibling_linears = true;
  o.fuse_norm_prologues = true;
  o.prepare_weights = prepare;
  o.skip_passes = {"fuse_pointwise"};
  return compile(g, inputs, o).engine;
}

// Hugging Face's Llama exported in bf16 (weights are engine inputs: q, k and v one grouped
// product a layer) : the product, which rotates q and k, takes the k and v cache writes past the
// steps in between (the position arithmetic), which they are independent of. The two writes
// still pair for the case the kernel refuses.
TEST(LaunchGroups, Bf16CacheWritesJoinTheirProductsPastStepsInBetween) {
  auto g = testing::hf_fixture("llama_bf16");
  auto e = gpu_plan_engine(*g);
  const Plan& plan = e->plan();
  const cuda::LaunchGroups lg = cuda::plan_launch_groups(plan);
  int groups = 0, kv_pairs = 0;
  for (size_t q = 0; q < plan.steps.size(); ++q) {
    if (lg.pair[q] && op_of(plan.steps[q]) == "kv_cache_update") ++kv_pairs;
    if (lg.write_count[q] == 0) continue;
    ++groups;
    EXPECT_EQ(op_of(plan.steps[q]), "rms_norm_linear") << plan.steps[q].node;
    ASSERT_EQ(lg.write_count[q], 2) << plan.steps[q].node;
    for (size_t w : lg.write_steps[q]) {
      EXPECT_GT(w, q) << plan.steps[q].node;
      EXPECT_EQ(op_of(plan.steps[w]), "kv_cache_update") << plan.steps[w].node;
    }
  }
  EXPECT_EQ(groups, 2) << e->describe();  // one a layer
  EXPECT_EQ(kv_pairs, 2) << e->describe();
}

// Hugging Face's rotary table, as torch.export records it (cos and sin of cat(freqs, freqs), each
// cast to bf16) is two rotary_table steps (fuse_rotary_table) over the same inputs: one launch (a
// pair).
TEST(LaunchGroups, TheRotaryTablesCosAndSinPairUp) {
  for (const char* model : {"llama_bf16", "qwen2_bf16", "gemma_bf16", "mistral_bf16"}) {
    SCOPED_TRACE(model);
    auto g = testing::hf_fixture(model);
    std::vector<Tensor> inputs;
    for (Node* p : g->placeholders())
      inputs.push_back(Tensor::zeros(*p->meta.shape, *p->meta.dtype));
    auto e = compile(*g, inputs, testing::gpu_like_options()).engine;
    const Plan& plan = e->plan();
    const cuda::LaunchGroups lg = cuda::plan_launch_groups(plan);
    int table_pairs = 0;
    for (size_t q = 0; q < plan.steps.size(); ++q)
      if (lg.pair[q] && op_of(plan.steps[q]) == "rotary_table") {
        ++table_pairs;
        EXPECT_EQ(op_of(plan.steps[q + 1]), "rotary_table");
      }
    EXPECT_EQ(table_pairs, 1) << e->describe();
  }
}

// The groups of epilogue writes of `e`'s plan, each expected to be a step of `product` taking
// two kv_cache_update steps.
int write_groups(const Engine& e, const std::string& product) {
  const Plan& plan = e.plan();
  const cuda::LaunchGroups lg = cuda::plan_launch_groups(plan);
  int groups = 0;
  for (size_t q = 0; q < plan.steps.size(); ++q) {
    if (lg.write_count[q] == 0) continue;
    ++groups;
    EXPECT_EQ(op_of(plan.steps[q]), product) << plan.steps[q].node;
    EXPECT_EQ(lg.write_count[q], 2) << plan.steps[q].node;
    for (size_t w : lg.write_steps[q]) EXPECT_EQ(op_of(plan.steps[w]), "kv_cache_update");
  }
  return groups;
}

// GPT-2 (float32 and bf16): c_attn, a fused_addmm with ln_1 as its prologue, takes its layer's k
// and v cache writes; the token and position embeddings pair up.
TEST(LaunchGroups, Gpt2CacheWritesJoinTheAddmmProduct) {
  for (const char* model : {"gpt2", "gpt2_bf16"}) {
    auto e = gpu_plan_engine(*testing::hf_fixture(model));
    EXPECT_EQ(write_groups(*e, "fused_addmm"), 2) << model << "\n" << e->describe();  // a layer
    const cuda::LaunchGroups lg = cuda::plan_launch_groups(e->plan());
    int embedding_pairs = 0;
    for (size_t q = 0; q < e->plan().steps.size(); ++q)
      embedding_pairs += lg.pair[q] && op_of(e->plan().steps[q]) == "embedding";
    EXPECT_EQ(embedding_pairs, 1) << model << "\n" << e->describe();
  }
}

// GPT-2 with its Conv1D weights prepared (the cuda backend's default): at bf16 c_attn is an
// rms_norm_linear with ln_1 as its LayerNorm prologue and takes its layer's k and v cache writes;
// at float32 (a cuBLAS product, no epilogue) the writes pair up.
TEST(LaunchGroups, PreparedGpt2CacheWritesJoinTheNormedProduct) {
  auto half = gpu_plan_engine(*testing::hf_fixture("gpt2_bf16"), /*prepare=*/true);
  EXPECT_EQ(write_groups(*half, "rms_norm_linear"), 2) << half->describe();  // a layer
  auto f32 = gpu_plan_engine(*testing::hf_fixture("gpt2"), /*prepare=*/true);
  EXPECT_EQ(write_groups(*f32, "rms_norm_linear"), 0) << f32->describe();
  const cuda::LaunchGroups lg = cuda::plan_launch_groups(f32->plan());
  int kv_pairs = 0;
  for (size_t q = 0; q < f32->plan().steps.size(); ++q)
    kv_pairs += lg.pair[q] && op_of(f32->plan().steps[q]) == "kv_cache_update";
  EXPECT_EQ(kv_pairs, 2) << f32->describe();
}

// One q/k/v product (a fused weight) whose q and k heads rotate in its epilogue takes both writes,
// at bf16 and fp16.
TEST(LaunchGroups, HalfCacheWritesJoinAFusedQkvProduct) {
  for (DType dt : {DType::kBFloat16, DType::kFloat16}) {
    testing::QkvShape s;
    s.dtype = dt;
    s.merged = true;
    auto e = gpu_plan_engine(*testing::qkv_rotary_graph(s));
    EXPECT_EQ(write_groups(*e, "rms_norm_linear"), 1) << e->describe();
  }
}

// Two independent index_select steps into temporaries: paired when their arena ranges are
// apart, not when the memory plan made them share bytes.
TEST(LaunchGroups, TemporariesPairOnlyWhenTheirMemoryIsApart) {
  const OpDef* op = Registry::get().find("index_select");
  ASSERT_NE(op, nullptr);
  auto step = [&](int out, int table) {
    Step s;
    s.op = op;
    s.node = "select" + std::to_string(out);
    s.args = {Value::from_tensor(Tensor::meta({8, 4}, DType::kFloat32)), Value::integer(0),
              Value::from_tensor(Tensor::meta({1}, DType::kInt64))};
    s.tensors.push_back({{0}, TensorRef{{BufferKind::kConstant, table}, 0, {8, 4}, {4, 1}}});
    s.tensors.push_back({{2}, TensorRef{{BufferKind::kInput, 0}, 0, {1}, {1}, DType::kInt64}});
    s.outs.push_back(TensorRef{{BufferKind::kArena, out}, 0, {1, 4}, {4, 1}});
    return s;
  };
  Plan plan;
  plan.steps = {step(0, 0), step(1, 1)};
  plan.arena = {{0, 16}, {16, 16}};
  EXPECT_NE(cuda::plan_launch_groups(plan).pair[0], nullptr);
  plan.arena = {{0, 16}, {8, 16}};
  EXPECT_EQ(cuda::plan_launch_groups(plan).pair[0], nullptr);
  // The second reading what the first writes: never.
  plan.arena = {{0, 16}, {16, 16}};
  plan.steps[1].tensors[0].ref.buffer = {BufferKind::kArena, 0};
  EXPECT_EQ(cuda::plan_launch_groups(plan).pair[0], nullptr);
}

// A Hugging Face decoder writes its per-layer position state, `cumulative_length =
// cache_position[0] + 1`, with one int64 add a layer, each independent of everything between:
// one batch at the first, every later one a member (the bf16 Llama fixture, the GPU's fusion
// choices, compiled for the cpu: the same steps).
TEST(LaunchGroups, PerLayerPositionStateWritesAreOneBatch) {
  auto g = testing::hf_fixture("llama_bf16");
  std::vector<Tensor> inputs;
  for (Node* n : g->placeholders()) inputs.push_back(Tensor::zeros(*n->meta.shape, *n->meta.dtype));
  CompileOptions o;
  o.merge_sibling_linears = true;
  o.fuse_norm_prologues = true;
  auto engine = compile(*g, inputs, o).engine;
  const Plan& plan = engine->plan();
  const cuda::LaunchGroups lg = cuda::plan_launch_groups(plan);
  std::vector<size_t> int_adds;
  for (size_t q = 0; q < plan.steps.size(); ++q)
    if (op_of(plan.steps[q]) == "add" && plan.steps[q].outs[0].dtype == DType::kInt64)
      int_adds.push_back(q);
  ASSERT_EQ(int_adds.size(), 2u);  // one a layer
  EXPECT_NE(lg.batch[int_adds[0]], nullptr);
  EXPECT_EQ(lg.batch_members[int_adds[0]], std::vector<size_t>{int_adds[1]});
  EXPECT_TRUE(lg.batched[int_adds[1]]);
  for (size_t q = 0; q < plan.steps.size(); ++q) {
    if (!lg.batched[q]) continue;
    EXPECT_EQ(lg.pair[q], nullptr);
    EXPECT_EQ(lg.writes[q], nullptr);
  }
}

// Three adds into temporaries: the third joins the first's batch only when nothing from the
// first up to it reads or writes its result's memory.
TEST(LaunchGroups, ABatchMemberIsIndependentOfEveryStepItPasses) {
  const OpDef* add = Registry::get().find("add.Tensor");
  ASSERT_NE(add, nullptr);
  auto step = [&](int out, BufferId in) {
    Step s;
    s.op = add;
    s.node = "add" + std::to_string(out);
    s.args = {Value::from_tensor(Tensor::meta({4}, DType::kInt64)), Value::integer(1)};
    s.tensors.push_back({{0}, TensorRef{in, 0, {4}, {1}, DType::kInt64}});
    s.outs.push_back(TensorRef{{BufferKind::kArena, out}, 0, {4}, {1}, DType::kInt64});
    return s;
  };
  const BufferId x{BufferKind::kInput, 0};
  Plan plan;
  plan.steps = {step(0, x), step(1, {BufferKind::kArena, 0}), step(2, x)};
  plan.arena = {{0, 32}, {32, 32}, {64, 32}};
  cuda::LaunchGroups g = cuda::plan_launch_groups(plan);
  ASSERT_NE(g.batch[0], nullptr);  // step 1 reads step 0's result; step 2 joins
  EXPECT_EQ(g.batch_members[0], std::vector<size_t>{2});
  // Step 2's result where step 1 writes (the memory plan reused it): it stays in place.
  plan.arena = {{0, 32}, {32, 32}, {40, 32}};
  g = cuda::plan_launch_groups(plan);
  EXPECT_EQ(g.batch[0], nullptr);
  EXPECT_FALSE(g.batched[2]);
  // Another dtype: never one batch.
  plan.arena = {{0, 32}, {32, 32}, {64, 32}};
  plan.steps[2].outs[0].dtype = DType::kFloat32;
  EXPECT_EQ(cuda::plan_launch_groups(plan).batch[0], nullptr);
}

// A decoder whose q and k heads are RMS-normalised before the rotary (Qwen3; the Hugging
// Face-style fixture with --qk-norm): each layer's two rms_norm_rotary steps run as one launch.
TEST(LaunchGroups, QkNormRotaryStepsPairUp) {
  std::ifstream in(std::string(INPLACE_SOURCE_DIR) +
                   "/tests/compiler/fixtures/hf_style_qk_norm_make_fx_bf16.json");
  std::stringstream text;
  text << in.rdbuf();
  auto e = gpu_plan_engine(*read_graph_json_string(text.str(), "qk_norm"));
  const Plan& plan = e->plan();
  const cuda::LaunchGroups g = cuda::plan_launch_groups(plan);
  int steps = 0, pairs = 0;
  for (size_t q = 0; q < plan.steps.size(); ++q) {
    if (op_of(plan.steps[q]) != "rms_norm_rotary") continue;
    ++steps;
    if (g.pair[q]) {
      ++pairs;
      EXPECT_EQ(op_of(plan.steps[q + 1]), "rms_norm_rotary") << plan.steps[q].node;
    }
  }
  EXPECT_EQ(steps, 4) << e->describe();  // q and k of 2 layers
  EXPECT_EQ(pairs, 2) << e->describe();
}

// Qwen3 as torch.export records it (bf16): each layer's q and k heads, adjacent columns of its
// q/k/v product, are normalised and rotated by one step, which takes the k cache write into its
// launch; the v cache write joins the product's epilogue.
TEST(LaunchGroups, Qwen3QkHeadsAreOneStepWithTheKWrite) {
  auto e = gpu_plan_engine(*testing::hf_fixture("qwen3_bf16"));
  const Plan& plan = e->plan();
  const cuda::LaunchGroups g = cuda::plan_launch_groups(plan);
  int norm_steps = 0, norm_writes = 0, product_writes = 0;
  for (size_t q = 0; q < plan.steps.size(); ++q) {
    const std::string op = op_of(plan.steps[q]);
    if (op == "rms_norm_rotary") {
      ++norm_steps;
      norm_writes += g.write_count[q];
    }
    if (op == "rms_norm_linear") product_writes += g.write_count[q];
    for (size_t w : g.write_steps[q])
      EXPECT_EQ(op_of(plan.steps[w]), "kv_cache_update") << plan.steps[w].node;
  }
  EXPECT_EQ(norm_steps, 2) << e->describe();      // one a layer: q and k heads together
  EXPECT_EQ(norm_writes, 2) << e->describe();     // its k write
  EXPECT_EQ(product_writes, 2) << e->describe();  // the v write of each layer
}

// Gemma 3 as torch.export records it (bf16): the norm after attention (its residual add folded)
// joins the launch of the MLP's normed product right after it, the norm after the MLP that of
// the next layer's q/k/v product (with that product's v cache write) or of the LM head; no norm
// of them pairs or batches.
TEST(LaunchGroups, Gemma3NormsJoinTheProductAfterThem) {
  auto e = gpu_plan_engine(*testing::hf_fixture("gemma3_bf16"));
  const Plan& plan = e->plan();
  const cuda::LaunchGroups g = cuda::plan_launch_groups(plan);
  std::string joined;
  int with_writes = 0;
  for (size_t q = 0; q < plan.steps.size(); ++q) {
    if (!g.prologue[q]) continue;
    EXPECT_EQ(op_of(plan.steps[q]), "upcast_rms_norm") << plan.steps[q].node;
    EXPECT_EQ(g.pair[q], nullptr);
    EXPECT_EQ(g.batch[q], nullptr);
    joined += " " + op_of(plan.steps[q + 1]);
    with_writes += g.write_count[q + 1];
  }
  EXPECT_EQ(joined, " rms_norm_gated_mlp rms_norm_linear rms_norm_gated_mlp rms_norm_linear")
      << e->describe();
  EXPECT_EQ(with_writes, 1) << e->describe();  // the second layer's q/k/v takes its v write
}

// A plan whose product result lands on the norm's input (an engine file planned before the memory
// plan kept a joining norm's operands live): the blocks would overwrite what others still read,
// so the norm keeps its own launch.
TEST(LaunchGroups, ANormDoesNotJoinAProductWritingItsOperands) {
  auto e = gpu_plan_engine(*testing::hf_fixture("gemma3_bf16"));
  Plan plan = e->plan();
  const cuda::LaunchGroups before = cuda::plan_launch_groups(plan);
  size_t q = 0;
  while (q < plan.steps.size() && !before.prologue[q]) ++q;
  ASSERT_LT(q, plan.steps.size()) << e->describe();
  plan.steps[q + 1].outs[0] = plan.steps[q].tensors[0].ref;  // the norm's input
  EXPECT_EQ(cuda::plan_launch_groups(plan).prologue[q], nullptr);
}

// Llama's norms are its products' prologues already (no norm step before a product): no step
// joins the next one's launch.
TEST(LaunchGroups, LlamaNormsJoinNothing) {
  auto e = gpu_plan_engine(*testing::hf_fixture("llama_bf16"));
  const cuda::LaunchGroups g = cuda::plan_launch_groups(e->plan());
  for (size_t q = 0; q < e->plan().steps.size(); ++q)
    EXPECT_EQ(g.prologue[q], nullptr) << e->plan().steps[q].node;
}

}  // namespace
}  // namespace inplace

#endif  // INPLACE_WITH_CUDA
