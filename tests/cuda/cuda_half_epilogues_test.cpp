// A decoder layer's q/k/v step at bfloat16 and float16 on the GPU (tests/compiler/
// qkv_rotary_graph.h: three products, or one of a fused q/k/v weight; 16 q heads, 4 kv heads, d
// 64 and 128, d_model 1024): the product rotates q and k in its epilogue (fuse_rotary_epilogues,
// gemv_half) and writes k and v into the caches from it (the epilogue writes, one launch with
// the product), against the same graph compiled without fuse_rotary_epilogues and run one step
// a launch (INPLACE_PROFILE: no joined launches), bitwise: outputs and caches, positions across
// the cache including its last slot. A position past the cache raises the standalone
// kv_cache_update's error. Skipped, saying so, without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "compiler/compile.h"
#include "compiler/hf_fixtures.h"
#include "compiler/qkv_rotary_graph.h"
#include "compiler/rewrite_differential.h"
#include "cuda_test_util.h"
#include "engine/execution_context.h"
#include "ops/registry.h"
#ifdef INPLACE_WITH_CUDA
#include "kernels/cuda/launch_groups.h"
#endif

using namespace inplace;
using namespace inplace::testing;

namespace {

// One engine for the GPU and one context bound to device inputs that every draw is written into.
class DeviceEngine {
 public:
  DeviceEngine(const Graph& g, const std::vector<Tensor>& example, bool epilogues,
               bool one_step_a_launch, std::vector<std::string> skipped = {}) {
    CompileOptions o;
    o.device = Device::cuda();
    if (!epilogues) skipped.push_back("fuse_rotary_epilogues");
    o.skip_passes = std::move(skipped);
    program_ = compile(g, example, o);
    // A profiled context runs every step as its own launch (timed on the host).
    if (one_step_a_launch) setenv("INPLACE_PROFILE", "1", 1);
    ctx_ = std::make_unique<ExecutionContext>(program_.engine);
    if (one_step_a_launch) unsetenv("INPLACE_PROFILE");
    for (size_t i = 0; i < example.size(); ++i) {
      inputs_.push_back(example[i].to_device(Device::cuda()));
      ctx_->bind_input(static_cast<int>(i), inputs_.back());
    }
  }
  // The outputs, then every input after the call (the caches), on the host.
  std::vector<Tensor> call(const std::vector<Tensor>& draw) {
    for (size_t i = 0; i < draw.size(); ++i) write_device(inputs_[i], draw[i]);
    std::vector<Tensor> out;
    for (const Tensor& t : ctx_->execute()) out.push_back(to_host(t));
    for (const Tensor& t : inputs_) out.push_back(to_host(t));
    return out;
  }
  ExecutionContext& context() { return *ctx_; }
  std::string plan() const { return program_.engine->describe(); }

 private:
  CompiledProgram program_;
  std::unique_ptr<ExecutionContext> ctx_;
  std::vector<Tensor> inputs_;
};

// Every result and every input after each draw, fused against one step a launch: bitwise.
void expect_bitwise_alike(DeviceEngine& fused, DeviceEngine& steps,
                          const std::vector<std::vector<Tensor>>& draws) {
  for (size_t k = 0; k < draws.size(); ++k) {
    SCOPED_TRACE(str_cat("draw ", k));
    const std::vector<Tensor> a = fused.call(draws[k]), b = steps.call(draws[k]);
    ASSERT_EQ(a.size(), b.size());
    for (size_t j = 0; j < a.size(); ++j) EXPECT_TRUE(close(a[j], b[j], 0)) << "value " << j;
  }
}

QkvShape decode_shape(DType dt, int64_t d, bool merged, int64_t k = 1024) {
  QkvShape s;
  s.dtype = dt;
  s.d = d;
  s.merged = merged;
  s.k = k;
  s.s_max = 64;
  return s;
}

TEST(CudaHalfEpilogues, RotaryAndCacheWritesInTheProductBitwiseTheSteps) {
  IP_REQUIRE_CUDA();
  // d_model 2048 and 4096: the rotated product's columns take 2 and 4 warps each, as the
  // product's own do without the rotation.
  struct Case {
    DType dt;
    int64_t d, k;
  };
  std::vector<Case> cases;
  for (DType dt : {DType::kBFloat16, DType::kFloat16})
    for (int64_t d : {64, 128}) cases.push_back({dt, d, 1024});
  cases.push_back({DType::kBFloat16, 64, 2048});
  // Llama-3.2-1B's q/k/v geometry (as one product 3072 columns of 2048, 12.6 MB: the task
  // streams, every warp one task of two rounds).
  cases.push_back({DType::kBFloat16, 128, 2048});
  cases.push_back({DType::kFloat16, 128, 4096});
  for (const Case& c : cases)
    for (bool merged : {false, true}) {
      const DType dt = c.dt;
      const int64_t d = c.d;
      SCOPED_TRACE(
          str_cat(dtype_name(dt), " d ", d, " k ", c.k, merged ? " one q/k/v product" : ""));
      const QkvShape s = decode_shape(dt, d, merged, c.k);
      auto g = qkv_rotary_graph(s);
      const std::vector<std::vector<Tensor>> draws = rotary_draws_across(*g, s.s_max);
      DeviceEngine fused(*g, draws[0], true, false), steps(*g, draws[0], false, true);
      EXPECT_EQ(count_of(fused.plan(), "= rotary_embedding("), 0) << fused.plan();
      EXPECT_EQ(count_of(steps.plan(), "= rotary_embedding("), 2) << steps.plan();
      expect_bitwise_alike(fused, steps, draws);
      // Both cache writes ran inside a product's launch (k's with k's product, or both with
      // the one product).
      const ContextStats st = fused.context().stats();
      EXPECT_EQ(st.counter("joined_steps"), 2);
      EXPECT_EQ(steps.context().stats().counter("joined_steps"), 0);
      std::printf("[gpu suite] %s d %lld %s: %lld steps joined to a product's launch\n",
                  dtype_name(dt), (long long)d, merged ? "one q/k/v product" : "three products",
                  (long long)st.counter("joined_steps"));
    }
}

// Hugging Face's Llama exported in bf16 (tests/frontend/fixtures/hf/llama_bf16.json, 2 layers,
// q, k and v three products a layer): every bf16 rotary is a product's epilogue and each layer's
// k and v cache writes join k's and v's products (4 steps joined a call), bitwise the graph
// without fuse_rotary_epilogues run one step a launch.
TEST(CudaHalfEpilogues, TinyBf16LlamaJoinsItsCacheWrites) {
  IP_REQUIRE_CUDA();
  auto g = hf_fixture("llama_bf16");
  const std::vector<std::vector<Tensor>> draws = rotary_draws_across(*g, 64);
  DeviceEngine fused(*g, draws[0], true, false), steps(*g, draws[0], false, true);
  EXPECT_EQ(count_of(fused.plan(), "= rotary_embedding("), 0) << fused.plan();
  expect_bitwise_alike(fused, steps, draws);
  const ContextStats st = fused.context().stats();
  EXPECT_GE(st.counter("joined_steps"), 4);
  std::printf("[gpu suite] llama_bf16 fixture: %lld steps joined to another's launch\n",
              (long long)st.counter("joined_steps"));
}

// Qwen3 exported in bf16 (tests/frontend/fixtures/hf/qwen3_bf16.json, 2 layers): each layer's q
// and k heads are normalised and rotated by one step whose launch also stores the k heads into
// the cache, the v write joins the q/k/v product (4 steps joined a call), bitwise the graph
// without fuse_head_norm_rotary run one step a launch (the norms and rotaries apart).
TEST(CudaHalfEpilogues, TinyBf16Qwen3NormsItsHeadsAndJoinsItsCacheWrites) {
  IP_REQUIRE_CUDA();
  auto g = hf_fixture("qwen3_bf16");
  const std::vector<std::vector<Tensor>> draws = rotary_draws_across(*g, 64);
  DeviceEngine fused(*g, draws[0], true, false),
      steps(*g, draws[0], true, true, {"fuse_head_norm_rotary"});
  EXPECT_EQ(count_of(fused.plan(), "= rms_norm_rotary("), 2) << fused.plan();
  expect_bitwise_alike(fused, steps, draws);
  const ContextStats st = fused.context().stats();
  EXPECT_GE(st.counter("joined_steps"), 4);
  std::printf("[gpu suite] qwen3_bf16 fixture: %lld steps joined to another's launch\n",
              (long long)st.counter("joined_steps"));
}

// Gemma 3 exported in bf16 (tests/frontend/fixtures/hf/gemma3_bf16.json, 2 layers): the norm
// after attention (with its residual add and `1 + w` weight) runs in the launch of the MLP's
// product, which normalises its result again, and the norm after the MLP in the launch of the
// next q/k/v product (or the LM head's), which also takes its v cache write: bitwise the same
// steps run one a launch (each norm by its own kernel), at every position of the cache.
TEST(CudaHalfEpilogues, TinyBf16Gemma3JoinsItsNormsToTheNextProduct) {
  IP_REQUIRE_CUDA();
  auto g = hf_fixture("gemma3_bf16");
  const std::vector<std::vector<Tensor>> draws = rotary_draws_across(*g, 64);
  DeviceEngine fused(*g, draws[0], true, false), steps(*g, draws[0], true, true);
  expect_bitwise_alike(fused, steps, draws);
  const ContextStats st = fused.context().stats();
  // 4 norms joined, 2 k writes with their head norms, 2 v writes with their products.
  EXPECT_GE(st.counter("joined_steps"), 8);
  std::printf("[gpu suite] gemma3_bf16 fixture: %lld steps joined to another's launch\n",
              (long long)st.counter("joined_steps"));
}

// A position one past the cache: the row write from the product's epilogue skips it and raises
// the error of the standalone kv_cache_update, naming a cache write (the same one where one write
// runs a launch).
TEST(CudaHalfEpilogues, PositionPastTheCacheIsTheStandaloneWritesError) {
  IP_REQUIRE_CUDA();
  for (bool merged : {false, true}) {
    SCOPED_TRACE(merged ? "one q/k/v product" : "three products");
    const QkvShape s = decode_shape(DType::kBFloat16, 64, merged);
    auto g = qkv_rotary_graph(s);
    const std::vector<Tensor> ok = rotary_draw(*g, 5, 3), past = rotary_draw(*g, 6, s.s_max);
    std::string messages[2];
    for (int fused = 0; fused < 2; ++fused) {
      DeviceEngine e(*g, ok, fused == 1, fused == 0);
      const std::vector<Tensor> before = e.call(ok);
      try {
        e.call(past);
        e.context().synchronize();
        ADD_FAILURE() << "no error for position " << s.s_max << (fused ? " (fused)" : "");
      } catch (const Error& err) {
        messages[fused] = err.what();
      }
      // Found on the device ("outside the indexed dim") by a cache write, wherever it ran.
      EXPECT_NE(messages[fused].find("_cache_kv_update"), std::string::npos) << messages[fused];
      // The context goes on.
      EXPECT_NO_THROW(e.call(ok));
    }
    // Three products: k's write is the first in both (one write a launch); one product writes
    // k and v from one launch, where either may be found first.
    if (!merged) EXPECT_EQ(messages[0], messages[1]);
    std::printf("[gpu suite] position %lld of %lld (%s): %s\n", (long long)s.s_max,
                (long long)s.s_max, merged ? "one q/k/v product" : "three products",
                messages[1].c_str());
  }
}

#ifdef INPLACE_WITH_CUDA
// Where the writes cannot join a product, a layer's two kv_cache_update steps at a half dtype
// still run as one launch (the pair kernel), each equal to the cpu kernel's write: the update a
// transposed view of a product's slice ([1, 4, 1, d] of a [1, 1, 6 * d] row), the position a
// [1] tensor, every slot of the cache.
TEST(CudaHalfEpilogues, KvCacheUpdatePairAtHalfDtypes) {
  IP_REQUIRE_CUDA();
  KernelTable::get();  // registers the pair kernels
  const OpDef* op = Registry::get().find("kv_cache_update");
  ASSERT_NE(op, nullptr);
  const cuda::PairKernel* pair = cuda::LaunchKernels::get().find_pair(*op);
  ASSERT_NE(pair, nullptr);
  const Kernel* cpu = KernelTable::get().find(*op, DeviceType::kCpu);
  uint32_t seed = 2950;
  for (DType dt : {DType::kBFloat16, DType::kFloat16})
    for (int64_t pos : {0, 7, 15}) {
      SCOPED_TRACE(str_cat(dtype_name(dt), " position ", pos));
      const int64_t d = 64;
      const Tensor row = random_tensor({1, 1, 6 * d}, dt, seed++);
      auto heads = [&](int64_t at) {
        return row.slice(2, at, at + 4 * d).view({1, 1, 4, d}).transpose(1, 2);
      };
      const Tensor index = Tensor::from_vector<int64_t>({pos}, {1});
      Tensor caches[2] = {random_tensor({1, 4, 16, d}, dt, seed++),
                          random_tensor({1, 4, 16, d}, dt, seed++)};
      Tensor want[2], got[2];
      std::vector<Value> args[2];
      for (int i = 0; i < 2; ++i) {
        ResolvedCall call =
            resolve_call("inplace.kv_cache_update",
                         {Value::from_tensor(caches[i]), Value::from_tensor(heads(i * d))},
                         {{"index", Value::from_tensor(index)}}, "test");
        want[i] = caches[i].clone();
        std::vector<Value> a = call.args;
        a[0] = Value::from_tensor(want[i]);
        (*cpu)(a, {want[i]}, KernelContext{});
        got[i] = to_cuda_view(caches[i]);
        args[i] = call.args;
        for (Value& v : args[i])
          if (v.is_tensor()) v = Value::from_tensor(to_cuda_view(v.tensor));
        args[i][0] = Value::from_tensor(got[i]);
      }
      (*pair)(args[0], {got[0]}, KernelContext{}, args[1], {got[1]}, KernelContext{});
      for (int i = 0; i < 2; ++i) EXPECT_TRUE(close(to_host(got[i]), want[i], 0)) << "cache " << i;
    }
}
#endif

}  // namespace
