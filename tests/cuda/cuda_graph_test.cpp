// CUDA graphs, runtime scalars on the device and the device error flag (docs/cuda.md): random
// programs whose positions are inputs, compiled once for cuda and run on fresh draws written
// into the same device tensors, with graphs on and off, against the cpu eager interpreter; the
// built-in tiny decoder replaying one graph over many positions, equal to the cpu engine; a
// re-capture after a cache moves; a position outside the cache reported as an error. Skipped,
// saying so, without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "compiler/compile.h"
#include "compiler/differential.h"
#include "cuda_test_util.h"
#include "engine/execution_context.h"
#include "models/llama.h"
#include "models/llama_runner.h"
#include "random_program.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

struct GraphTotals {
  int programs = 0, draws = 0, on_device = 0;
  int64_t captures = 0, replays = 0;
};

// One engine and one context per program; every draw is written into the same bound device
// tensors (the buffers reset to their initial values), so a graph replays across draws.
void run_draws(const CompiledProgram& cp, const RandomProgram& p,
               const std::vector<std::vector<Tensor>>& draws, bool graph, GraphTotals* totals,
               const char* what) {
  const Graph& g = *p.graph;
  std::vector<Tensor> dev_inputs;
  for (const Tensor& t : draws[0]) dev_inputs.push_back(t.to_device(Device::cuda()));
  const State initial = initial_state(g);
  std::map<std::string, Tensor> dev_state;
  for (const auto& [k, v] : initial) dev_state[k] = v.to_device(Device::cuda());
  ExecutionContext ctx(cp.engine);
  ctx.set_backend_option("cuda_graph", graph ? "on" : "off");
  for (int i = 0; i < cp.num_user_inputs; ++i) ctx.bind_input(i, dev_inputs[i]);
  for (const auto& [index, target] : cp.lifted_buffers) ctx.bind_input(index, dev_state.at(target));
  std::vector<const void*> addresses;
  for (const Tensor& t : dev_inputs) addresses.push_back(t.data_ptr());
  int ran = 0;
  for (size_t k = 0; k < draws.size(); ++k) {
    EagerRun ref;
    try {
      ref = run_reference(g, draws[k]);
    } catch (const Error&) {
      continue;  // a value eager refuses
    }
    for (size_t i = 0; i < draws[k].size(); ++i) write_device(dev_inputs[i], draws[k][i]);
    for (const auto& [name, v] : initial) write_device(dev_state.at(name), v);
    std::vector<Tensor> outs = ctx.execute();
    ctx.synchronize();
    ++ran;
    for (const Mutation& a : cp.engine->aliased_io()) {
      const Tensor& in = a.input < cp.num_user_inputs
                             ? dev_inputs[a.input]
                             : dev_state.at(cp.program.context.input_names[a.input]);
      EXPECT_EQ(outs[a.output].data_ptr(), in.data_ptr())
          << what << ": aliased output " << a.output;
    }
    for (size_t j = 0; j < ref.outputs.size(); ++j)
      EXPECT_TRUE(close(to_host(outs[j]), ref.outputs[j], 1e-5))
          << what << " draw " << k << " output " << j;
    for (size_t i = 0; i < dev_inputs.size(); ++i)
      EXPECT_TRUE(close(to_host(dev_inputs[i]), ref.inputs[i], 1e-5))
          << what << " draw " << k << " input " << i;
    for (const auto& [name, v] : ref.state)
      EXPECT_TRUE(close(to_host(dev_state.at(name)), v, 1e-5))
          << what << " draw " << k << " buffer " << name;
  }
  for (size_t i = 0; i < dev_inputs.size(); ++i)
    EXPECT_EQ(dev_inputs[i].data_ptr(), addresses[i]) << what << ": input " << i << " moved";
  const ContextStats st = ctx.stats();
  if (graph && ran >= 3 && ctx.stats().counter("scalars_on_device")) {
    // Nothing the host evaluates changes between draws: one capture serves them all.
    EXPECT_EQ(st.counter("graph_captures"), 1) << what;
    EXPECT_EQ(st.counter("graph_replays"), ran - 2) << what;
  }
  if (!graph) EXPECT_EQ(st.counter("graph_captures"), 0) << what;
  if (ctx.stats().counter("scalars_on_device")) EXPECT_EQ(st.host_scalar_reads, 0) << what;
  totals->draws += ran;
  totals->captures += st.counter("graph_captures");
  totals->replays += st.counter("graph_replays");
  totals->on_device += ctx.stats().counter("scalars_on_device") ? 1 : 0;
}

TEST(CudaGraph, RandomProgramsWithPositionsOnFreshDrawsGraphsOnAndOff) {
  IP_REQUIRE_CUDA();
  GraphTotals on, off;
  int refused = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    RandomProgramOptions o;
    o.runtime_positions = true;
    RandomProgram p = make_random_program(seed, o);
    std::vector<std::vector<Tensor>> draws{in_placeholder_order(p, p.inputs)};
    for (uint64_t k = 1; k < 6; ++k)
      draws.push_back(in_placeholder_order(p, redraw_inputs(p, seed * 31 + k)));
    SCOPED_TRACE(::testing::Message() << "seed " << seed << "\n" << p.graph->to_string());
    for (bool alias : {true, false}) {
      CompileOptions co;
      co.alias = alias;
      co.device = Device::cuda();
      std::optional<CompiledProgram> cp;
      try {
        cp = compile(*p.graph, draws[0], co);
      } catch (const Error& e) {
        if (std::string(e.what()).find("has no kernel for device 'cuda") == std::string::npos)
          ADD_FAILURE() << "seed " << seed << ": " << e.what();
        ++refused;
        break;
      }
      const char* what = alias ? "aliased" : "copy-back";
      run_draws(*cp, p, draws, /*graph=*/true, &on, what);
      run_draws(*cp, p, draws, /*graph=*/false, &off, what);
      ++on.programs;
    }
    if (::testing::Test::HasFailure()) break;
  }
  std::printf(
      "[gpu suite] graphs: %d engines over %d draws with graphs on (%lld captures, %lld "
      "replays; %d with scalars on the device), %d draws with graphs off, %d programs refused\n",
      on.programs, on.draws, (long long)on.captures, (long long)on.replays, on.on_device, off.draws,
      refused);
  EXPECT_GE(on.programs, 40);
  EXPECT_GT(on.replays, 0);
}

using models::LlamaConfig;

struct Decoders {
  LlamaConfig c;
  models::LlamaWeights w;
  explicit Decoders(DType dtype = DType::kFloat32, int64_t s_max = 64, const char* size = "tiny")
      : c(models::llama_config(size, s_max, 7, dtype)), w(models::llama_weights(c)) {}
};

// The aliased decode context of a cuda runner reads its positions on the device and replays
// one graph for every position; tokens, logits and caches equal the cpu engine's.
void decode_against_cpu(DType dtype, bool alias, const char* size = "tiny", int64_t steps = 40) {
  Decoders d(dtype, 64, size);
  const int64_t prompt = 5;
  models::LlamaEngineRunner cpu(d.c, models::compile_llama(d.c, d.w, prompt, alias),
                                models::llama_new_caches(d.c));
  std::vector<Tensor> caches = models::llama_new_caches(d.c, Device::cuda());
  std::vector<const void*> addresses;
  for (const Tensor& t : caches) addresses.push_back(t.data_ptr());
  models::LlamaEngineRunner gpu(d.c, models::compile_llama(d.c, d.w, prompt, alias, Device::cuda()),
                                caches);
  gpu.set_cuda_graph(true);
  std::vector<int64_t> tokens;
  for (int64_t i = 0; i < prompt; ++i) tokens.push_back((i * 37 + 3) % d.c.vocab);
  Tensor want = cpu.prefill(tokens), got = gpu.prefill(tokens);
  EXPECT_TRUE(close(to_host(got), want, 1e-4)) << "prefill";
  int64_t token = models::argmax_token(want);
  for (int64_t i = 0; i < steps; ++i) {
    want = cpu.decode(token, prompt + i);
    got = gpu.decode(token, prompt + i);
    gpu.session().synchronize();
    ASSERT_TRUE(close(to_host(got), want, 1e-4)) << "decode step " << i;
    ASSERT_EQ(models::argmax_token(got), models::argmax_token(want)) << "decode step " << i;
    token = models::argmax_token(want);
  }
  for (size_t j = 0; j < caches.size(); ++j) {
    EXPECT_EQ(caches[j].data_ptr(), addresses[j]) << "cache " << j << " moved";
    EXPECT_TRUE(close(to_host(gpu.caches()[j]), cpu.caches()[j], 1e-4)) << "cache " << j;
  }
  const ContextStats st = gpu.session().stats("decode");
  EXPECT_TRUE(gpu.session().stats("decode").counter("scalars_on_device"));
  EXPECT_EQ(st.host_scalar_reads, 0);
  EXPECT_EQ(st.counter("graph_captures"), 1);
  EXPECT_EQ(st.counter("graph_replays"), steps - 2);
  EXPECT_EQ(st.staged_inputs, 0);  // the runner binds its token and position once
  // A layer's k and v cache writes run inside the launch of the q/k/v product (bf16 weights:
  // its epilogue writes) or as one paired launch (float32 weights: a cuBLAS product).
  if (alias)
    EXPECT_GE(st.counter("joined_steps"),
              dtype == DType::kBFloat16 ? 2 * d.c.n_layers : d.c.n_layers);
  std::printf(
      "[gpu suite] %s decoder (%s, %s): %lld decode steps, %lld capture, %lld replays, %lld "
      "steps joined to another's launch\n",
      size, dtype_name(dtype), alias ? "aliased" : "copy-back", (long long)st.calls,
      (long long)st.counter("graph_captures"), (long long)st.counter("graph_replays"),
      (long long)st.counter("joined_steps"));
}

TEST(CudaGraph, TinyDecoderReplaysOneGraphOverEveryPosition) {
  IP_REQUIRE_CUDA();
  decode_against_cpu(DType::kFloat32, /*alias=*/true);
}

TEST(CudaGraph, TinyDecoderBf16WeightsAndCopyBackEngine) {
  IP_REQUIRE_CUDA();
  decode_against_cpu(DType::kBFloat16, /*alias=*/true);
  decode_against_cpu(DType::kFloat32, /*alias=*/false);
}

// The small decoder (d_model 512, SwiGLU 1408): its down_proj rows are long enough to be split
// over two warps a column; the steps equal the cpu engine, caches included.
TEST(CudaGraph, SmallDecoderBf16SplitRows) {
  IP_REQUIRE_CUDA();
  decode_against_cpu(DType::kBFloat16, /*alias=*/true, "small", 12);
}

TEST(CudaGraph, RecapturesWhenACacheMoves) {
  IP_REQUIRE_CUDA();
  Decoders d;
  models::LlamaEngineRunner cpu(d.c, models::compile_llama(d.c, d.w, 0, true),
                                models::llama_new_caches(d.c));
  models::LlamaEngineRunner gpu(d.c, models::compile_llama(d.c, d.w, 0, true, Device::cuda()),
                                models::llama_new_caches(d.c, Device::cuda()));
  gpu.set_cuda_graph(true);
  int64_t token = 1;
  for (int64_t pos = 0; pos < 6; ++pos) {
    cpu.decode(token, pos);
    gpu.decode(token, pos);
  }
  EXPECT_EQ(gpu.session().stats("decode").counter("graph_captures"), 1);
  // Move cache k0: a copy of its state at a new address, bound in its place.
  Tensor moved = gpu.caches()[0].to_device(Device::cpu()).to_device(Device::cuda());
  ASSERT_NE(moved.data_ptr(), gpu.caches()[0].data_ptr());
  gpu.session().bind_state("k0", moved);
  for (int64_t pos = 6; pos < 10; ++pos) {
    Tensor want = cpu.decode(token, pos), got = gpu.decode(token, pos);
    EXPECT_TRUE(close(to_host(got), want, 1e-4)) << "position " << pos;
  }
  const ContextStats st = gpu.session().stats("decode");
  // The first call after the move runs directly (a new key), the second captures again, the
  // last two replay.
  EXPECT_EQ(st.counter("graph_captures"), 2);
  EXPECT_EQ(st.counter("graph_replays"), 4 + 2);
  EXPECT_TRUE(close(to_host(moved), cpu.caches()[0], 1e-4)) << "the moved cache was written";
}

// A position past the cache is refused on the device, whether the cache write is its own launch
// (float32 weights) or the q/k/v product's epilogue (bf16 weights); the rotary table's read,
// one row per cache slot, is the first to see it.
TEST(CudaGraph, OutOfRangePositionIsAnError) {
  IP_REQUIRE_CUDA();
  for (DType dtype : {DType::kFloat32, DType::kBFloat16})
    for (bool graph : {false, true}) {
      Decoders d(dtype, 16);
      models::LlamaEngineRunner gpu(d.c, models::compile_llama(d.c, d.w, 0, true, Device::cuda()),
                                    models::llama_new_caches(d.c, Device::cuda()));
      gpu.set_cuda_graph(graph);
      for (int64_t pos = 0; pos < 3; ++pos) gpu.decode(1, pos);
      gpu.session().synchronize();
      gpu.decode(1, 16);  // one past the cache: reported at the next check, never silently
      try {
        gpu.session().synchronize();
        ADD_FAILURE() << "no error for position 16 of a 16-slot cache (graph "
                      << (graph ? "on" : "off") << ")";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("outside the indexed dim"), std::string::npos)
            << e.what();
        std::printf("[gpu suite] position 16 of 16 (%s, %s): %s\n", dtype_name(dtype),
                    graph ? "graph on" : "graph off", e.what());
      }
      // Reported once; the context goes on.
      gpu.decode(1, 3);
      EXPECT_NO_THROW(gpu.session().synchronize());
      // The next execute reports it when the bad call has completed by then.
      gpu.decode(1, -100);
      Tensor probe = to_host(gpu.caches()[0]);  // waits for the device
      EXPECT_THROW(gpu.decode(1, 4), Error);
    }
}

}  // namespace

// A decode loop from Python passes a fresh token and position tensor every call: small inputs
// the call only reads are staged into the context's memory, so one graph still serves every
// call (the runner bound its own token and position tensors first, so the first fresh one is a
// move: staged from the first call, 1 capture at the second, then replays); logits equal the cpu
// engine's.
TEST(CudaGraph, FreshTokenAndPositionTensorsEveryCallReplayOneGraph) {
  IP_REQUIRE_CUDA();
  Decoders d;
  models::LlamaEngineRunner cpu(d.c, models::compile_llama(d.c, d.w, 0, true),
                                models::llama_new_caches(d.c));
  models::LlamaEngineRunner gpu(d.c, models::compile_llama(d.c, d.w, 0, true, Device::cuda()),
                                models::llama_new_caches(d.c, Device::cuda()));
  gpu.set_cuda_graph(true);
  const std::vector<std::string> names = models::llama_input_names(d.c);
  Session& session = gpu.session();
  const int64_t steps = 20;
  int64_t token = 1;
  for (int64_t pos = 0; pos < steps; ++pos) {
    const Tensor want = cpu.decode(token, pos);
    Tensor t = Tensor::empty({1, 1}, DType::kInt64), p = Tensor::empty({1}, DType::kInt64);
    t.data<int64_t>()[0] = token;
    p.data<int64_t>()[0] = pos;
    const Tensor fresh_t = t.to_device(Device::cuda()), fresh_p = p.to_device(Device::cuda());
    const Tensor got = session.run("decode", {{names[0], fresh_t}, {names[1], fresh_p}})[0];
    session.synchronize();
    ASSERT_TRUE(close(to_host(got), want, 1e-4)) << "decode step " << pos;
    token = models::argmax_token(want);
  }
  const ContextStats st = session.stats("decode");
  EXPECT_EQ(st.counter("graph_captures"), 1);
  EXPECT_EQ(st.counter("graph_replays"), steps - 2);
  EXPECT_EQ(st.staged_inputs, 2);  // the token and the position, nothing the runner bound once
  std::printf(
      "[gpu suite] fresh token and position tensors: %lld calls, %lld capture, %lld "
      "replays\n",
      (long long)st.calls, (long long)st.counter("graph_captures"),
      (long long)st.counter("graph_replays"));
}
