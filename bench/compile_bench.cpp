// Compile time against graph size: a chain of N in-place ops on a cache-like state (x.add_,
// a slice write at a runtime position, mul_), compiled with compile(). Compilation must grow
// linearly in N. Run: build/bench/compile_bench [N...]   (default 1000 2000 5000 10000)
// With --model SIZE [REPS]: the pass pipeline over the built-in model's decode graph (bf16
// weights, every fusion but merge_sibling_linears on), the best of REPS runs, with the metas cached
// between passes (as compile() runs it) and inferred again in every pass (the cache dropped after
// each pass).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cstring>
#include <string>

#include "compiler/compile.h"
#include "ir/builder.h"
#include "models/llama.h"
#include "passes/meta_inference.h"
#include "passes/pipeline.h"

using namespace inplace;

namespace {

std::unique_ptr<Graph> chain(int n) {
  GraphBuilder b("chain");
  Node* x = b.placeholder("x");
  Node* k = b.placeholder("k");
  Node* pos = b.placeholder("pos");
  Node* end = b.call_function("_operator.add", {pos, 1});
  for (int i = 0; i < n; ++i) {
    switch (i % 3) {
      case 0:
        b.call_method("add_", {x, 1.0});
        break;
      case 1:
        b.call_function("_operator.setitem",
                        {x, arg::tuple({arg::slice(), arg::slice(pos, end)}), k});
        break;
      default:
        b.call_method("mul_", {x, 0.5});
        break;
    }
  }
  b.output(arg::tuple({b.call_method("sum", {x})}));
  return b.build();
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The pass pipeline on a copy of `graph`: its wall time in ms, and the metas it inferred.
double run_pipeline(const Graph& graph, const std::vector<Tensor>& examples, bool cache,
                    int64_t* inferred) {
  PassContext ctx;
  std::vector<Node*> ph = graph.placeholders();
  for (size_t i = 0; i < ph.size(); ++i) {
    Meta m;
    m.shape = examples[i].shape();
    m.dtype = examples[i].dtype();
    ctx.options.input_metas[ph[i]->name] = m;
  }
  ctx.options.fuse_norm_prologues = true;  // merge_sibling_linears copies weights: off
  std::unique_ptr<Graph> g = graph.clone();
  *inferred = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (auto& pass : compile_passes()) {
    const int64_t before = ctx.meta_cache ? ctx.meta_cache->inferred() : 0;
    pass->run(*g, ctx);
    if (getenv("COMPILE_BENCH_VERBOSE") && ctx.meta_cache)
      std::printf("  %s: %lld\n", pass->name().c_str(),
                  static_cast<long long>(ctx.meta_cache->inferred() - before));
    if (ctx.meta_cache) *inferred += ctx.meta_cache->inferred();
    if (!cache) ctx.meta_cache.reset();
  }
  if (cache && ctx.meta_cache) *inferred = ctx.meta_cache->inferred();
  return ms_since(t0);
}

int model(const std::string& size, int reps) {
  const models::LlamaConfig c = models::llama_config(size, 1024, 0, DType::kBFloat16);
  const models::LlamaWeights w = models::llama_weights(c);
  const std::unique_ptr<Graph> g = models::llama_decode_graph(c, w);
  const std::vector<Tensor> examples = models::llama_example_inputs(c, 1);
  double best[2] = {1e30, 1e30};
  int64_t inferred[2] = {0, 0};
  for (int r = 0; r < reps; ++r)
    for (int cache : {0, 1})
      best[cache] = std::min(best[cache], run_pipeline(*g, examples, cache, &inferred[cache]));
  auto t0 = std::chrono::steady_clock::now();
  compile(*g, examples);
  const double whole = ms_since(t0);
  std::printf(
      "model %s decode graph: %zu nodes; passes, best of %d: %.1f ms with the meta cache "
      "(%lld metas inferred), %.1f ms inferring in every pass (%lld); compile() %.1f ms\n",
      size.c_str(), g->nodes().size(), reps, best[1], static_cast<long long>(inferred[1]), best[0],
      static_cast<long long>(inferred[0]), whole);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "--model") == 0)
    return model(argv[2], argc >= 4 ? std::atoi(argv[3]) : 5);
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {1000, 2000, 5000, 10000};
  std::printf("%8s %12s %14s %8s\n", "nodes", "compile_ms", "us_per_node", "steps");
  for (int n : sizes) {
    auto g = chain(n);
    std::vector<Tensor> examples{Tensor::meta({4, 16}, DType::kFloat32),
                                 Tensor::meta({4, 1}, DType::kFloat32),
                                 Tensor::meta({}, DType::kInt64)};
    auto t0 = std::chrono::steady_clock::now();
    CompiledProgram cp = compile(*g, examples);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%8zu %12.1f %14.2f %8zu\n", g->nodes().size(), ms, 1000.0 * ms / g->nodes().size(),
                cp.engine->plan().steps.size());
    std::fflush(stdout);
  }
  return 0;
}
