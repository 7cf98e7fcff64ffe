// Does a fused chain beat its unfused kernels on the cpu? The chains a model writes that no
// named rewrite knows, each compiled three ways and run by one execution context: unfused (one
// kernel an op: fuse_pointwise skipped), fused without row reductions (fused_pointwise steps
// between the reductions) and fused with them (fused_rows). Each state reports the bytes the
// chain must move (its inputs read once, its output written once) as bytes/s, so a form's rate
// sits next to the memory floor.
//
//   build/bench/fused_chains_bench [--benchmark_filter=norm_softmax]
#include <benchmark/benchmark.h>

#include <cmath>
#include <functional>
#include <random>

#include "compiler/compile.h"
#include "engine/execution_context.h"
#include "ir/builder.h"

using namespace inplace;

namespace {

Node* call(GraphBuilder& b, const char* target, std::vector<Arg> args) {
  return b.call_function(target, std::move(args));
}

// x / sqrt(mean(x * x) + eps) * w, then exp(h - amax(h)) / sum(...): a norm and a softmax
// written out (python/bench/hand_written_rows.py's block).
Node* norm_softmax(GraphBuilder& b, Node* x, Node* w) {
  Node* ms = call(b, "aten.mean.dim", {call(b, "aten.mul.Tensor", {x, x}), arg::ints({-1}), true});
  Node* d = call(b, "aten.sqrt.default", {call(b, "aten.add.Tensor", {ms, 1e-5})});
  Node* h = call(b, "aten.mul.Tensor", {call(b, "aten.div.Tensor", {x, d}), w});
  Node* m = call(b, "aten.amax.default", {h, arg::ints({-1}), true});
  Node* e = call(b, "aten.exp.default", {call(b, "aten.sub.Tensor", {h, m})});
  return call(b, "aten.div.Tensor",
              {e, call(b, "aten.sum.dim_IntList", {e, arg::ints({-1}), true})});
}

// GELU-tanh written out, of x + bias (a broadcast [cols] operand).
Node* bias_gelu_tanh(GraphBuilder& b, Node* x, Node* w) {
  Node* v = call(b, "aten.add.Tensor", {x, w});
  Node* cube = call(b, "aten.pow.Tensor_Scalar", {v, 3.0});
  Node* inner = call(b, "aten.add.Tensor", {v, call(b, "aten.mul.Tensor", {cube, 0.044715})});
  Node* t = call(b, "aten.tanh.default", {call(b, "aten.mul.Tensor", {inner, 0.7978845608028654})});
  Node* half = call(b, "aten.mul.Tensor", {v, 0.5});
  return call(b, "aten.mul.Tensor", {half, call(b, "aten.add.Tensor", {t, 1.0})});
}

// (x * w + residual-like x) scaled by a per-row value: the broadcast loads of a chain.
Node* row_scale(GraphBuilder& b, Node* x, Node* w) {
  Node* s = call(b, "aten.amax.default", {x, arg::ints({-1}), true});
  Node* y = call(b, "aten.add.Tensor", {call(b, "aten.mul.Tensor", {x, w}), x});
  return call(b, "aten.mul.Tensor", {y, call(b, "aten.reciprocal.default", {s})});
}

using Chain = std::function<Node*(GraphBuilder&, Node*, Node*)>;

void run(benchmark::State& state, const Chain& chain, DType dtype) {
  const int64_t rows = state.range(0), cols = state.range(1), form = state.range(2);
  GraphBuilder b("chain");
  Node* x = b.set_meta(b.placeholder("x"), {rows, cols}, dtype);
  Node* w = b.set_meta(b.placeholder("w"), {cols}, dtype);
  b.output(arg::tuple({chain(b, x, w)}));
  auto g = b.build();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  std::vector<float> xs(static_cast<size_t>(rows * cols)), ws(static_cast<size_t>(cols));
  for (float& v : xs) v = u(rng);
  for (float& v : ws) v = 0.5f + std::abs(u(rng));
  Tensor xt = Tensor::from_vector(xs, {rows, cols}).to(dtype);
  Tensor wt = Tensor::from_vector(ws, {cols}).to(dtype);
  CompileOptions opts;
  if (form == 0) opts.skip_passes = {"fuse_pointwise"};
  opts.fuse_rows = form == 2;
  auto compiled = compile(*g, {xt, wt}, opts);
  ExecutionContext ctx(compiled.engine);
  ctx.bind_input(0, xt);
  ctx.bind_input(1, wt);
  for (auto _ : state) {
    auto out = ctx.execute();
    benchmark::DoNotOptimize(out);
  }
  const int64_t bytes = 2 * xt.nbytes() + wt.nbytes();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
  state.SetLabel(form == 0 ? "unfused" : form == 1 ? "fused, rows left out" : "fused_rows");
}

void args(benchmark::internal::Benchmark* b) {
  for (auto shape : {std::pair<int64_t, int64_t>{1, 1024}, {4, 2048}, {64, 4096}})
    for (int64_t form : {0, 1, 2}) b->Args({shape.first, shape.second, form});
}

void norm_softmax_f32(benchmark::State& s) {
  run(s, norm_softmax, DType::kFloat32);
}
void norm_softmax_bf16(benchmark::State& s) {
  run(s, norm_softmax, DType::kBFloat16);
}
void bias_gelu_tanh_f32(benchmark::State& s) {
  run(s, bias_gelu_tanh, DType::kFloat32);
}
void bias_gelu_tanh_bf16(benchmark::State& s) {
  run(s, bias_gelu_tanh, DType::kBFloat16);
}
void row_scale_f32(benchmark::State& s) {
  run(s, row_scale, DType::kFloat32);
}

}  // namespace

BENCHMARK(norm_softmax_f32)->Apply(args)->ArgNames({"rows", "cols", "form"});
BENCHMARK(norm_softmax_bf16)->Apply(args)->ArgNames({"rows", "cols", "form"});
BENCHMARK(bias_gelu_tanh_f32)->Apply(args)->ArgNames({"rows", "cols", "form"});
BENCHMARK(bias_gelu_tanh_bf16)->Apply(args)->ArgNames({"rows", "cols", "form"});
BENCHMARK(row_scale_f32)->Apply(args)->ArgNames({"rows", "cols", "form"});
BENCHMARK_MAIN();
