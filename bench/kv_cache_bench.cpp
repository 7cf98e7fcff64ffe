// Per-call time of a KV-cache decode step (cache [1, 8, s_max, 64] float32, one new position
// per call): the aliased engine vs the copy-back engine, next to the memory-bandwidth floor of
// each (bytes it must move / measured copy bandwidth). Run:
//   build/kv_cache_bench --benchmark_format=json > bench.json && python3 bench/report.py bench.json
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "compiler/compile.h"
#include "engine/execution_context.h"
#include "ir/graph.h"

using namespace inplace;

namespace {

constexpr int64_t kHeads = 8, kHeadDim = 64;

// The user's program, with in-place semantics: cache[:, :, pos:pos+1] = k; return the new
// row's sum, read through the cache (so the write must land before the read).
std::unique_ptr<Graph> decode_step_graph() {
  auto g = std::make_unique<Graph>();
  auto N = [](Node* n) { return Value::node_ref(n); };
  Node* cache = g->add_node(NodeOp::kPlaceholder, "cache", {}, {}, "cache");
  Node* k = g->add_node(NodeOp::kPlaceholder, "k", {}, {}, "k");
  Node* pos = g->add_node(NodeOp::kPlaceholder, "pos", {}, {}, "pos");
  Node* end = g->add_node(NodeOp::kCallFunction, "_operator.add", {N(pos), Value::integer(1)});
  Value index = Value::tuple({Value::slice(Value::none(), Value::none(), Value::none()),
                              Value::slice(Value::none(), Value::none(), Value::none()),
                              Value::slice(N(pos), N(end), Value::none())});
  g->add_node(NodeOp::kCallFunction, "_operator.setitem", {N(cache), index, N(k)});
  Node* row = g->add_node(NodeOp::kCallFunction, "_operator.getitem", {N(cache), index});
  Node* s = g->add_node(NodeOp::kCallFunction, "torch.sum", {N(row)});
  g->add_node(NodeOp::kOutput, "output", {N(s)});
  return g;
}

void run(benchmark::State& state, bool alias) {
  const int64_t s_max = state.range(0);
  Tensor cache = Tensor::zeros({1, kHeads, s_max, kHeadDim}, DType::kFloat32);
  Tensor k = Tensor::full({1, kHeads, 1, kHeadDim}, Scalar(1.0), DType::kFloat32);
  Tensor pos = Tensor::scalar(Scalar(int64_t{0}), DType::kInt64);
  CompileOptions opts;
  opts.alias = alias;
  auto compiled = compile(*decode_step_graph(), {cache, k, pos}, opts);
  ExecutionContext ctx(compiled.engine);
  ctx.bind_input(0, cache);
  ctx.bind_input(1, k);
  ctx.bind_input(2, pos);
  int64_t p = 0;
  for (auto _ : state) {
    pos.data<int64_t>()[0] = p;
    p = (p + 1) % s_max;
    auto out = ctx.execute();
    benchmark::DoNotOptimize(out);
  }
  const double cache_bytes = static_cast<double>(cache.nbytes());
  const double row_bytes = static_cast<double>(k.nbytes());
  // Bytes the step must move at minimum: aliased writes the row (and reads it back);
  // copy-back also copies the cache into fresh memory and back (2 reads + 2 writes).
  state.counters["s_max"] = static_cast<double>(s_max);
  state.counters["cache_bytes"] = cache_bytes;
  state.counters["floor_bytes"] = alias ? 2 * row_bytes : 4 * cache_bytes + 2 * row_bytes;
  state.counters["arena_bytes"] = static_cast<double>(ctx.arena_bytes());
}

// Copy bandwidth of this machine, measured in the same run, for the floor.
void memcpy_bandwidth(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<char> a(n, 1), b(n, 0);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(2 * n));
}

void aliased(benchmark::State& s) {
  run(s, true);
}
void copy_back(benchmark::State& s) {
  run(s, false);
}

}  // namespace

BENCHMARK(aliased)->RangeMultiplier(2)->Range(256, 8192)->Unit(benchmark::kMicrosecond);
BENCHMARK(copy_back)->RangeMultiplier(2)->Range(256, 8192)->Unit(benchmark::kMicrosecond);
BENCHMARK(memcpy_bandwidth)->Arg(16 << 20);
BENCHMARK_MAIN();
