// Deep graphs: a chain of 20,000 in-place ops (x = x.add_(1), repeated) compiles on a thread
// with a 1 MiB stack and runs equal to eager; no walk of the pipeline recurses over the
// graph's depth. Compile times of 10k and 20k ops are logged.
#include <pthread.h>

#include <chrono>
#include <exception>
#include <functional>

#include "compiler/differential.h"
#include "engine/engine_file.h"
#include "frontend/graph_json.h"
#include "ir/builder.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

// x = x.add_(1) `n` times, then x.view_(...).mul_(2) through the last alias; return x * 1.
std::unique_ptr<Graph> inplace_chain(int n) {
  GraphBuilder b("chain");
  Node* x = b.placeholder("x");
  b.set_meta(x, {2, 3}, DType::kFloat32);
  Node* cur = x;
  for (int i = 0; i < n; ++i) cur = b.call_method("add_", {cur, 1.0});
  Node* row = b.call_function("_operator.getitem", {cur, 0});
  b.call_method("mul_", {row, 2.0});
  b.output(b.call_function("_operator.mul", {cur, 1}));
  return b.build();
}

// v = x; v = v.t() `n` times; v.add_(1); return v * 1: a write through a chain of views.
std::unique_ptr<Graph> view_chain(int n) {
  GraphBuilder b("views");
  Node* x = b.placeholder("x");
  b.set_meta(x, {2, 3}, DType::kFloat32);
  Node* cur = x;
  for (int i = 0; i < n; ++i) cur = b.call_method("t", {cur});
  b.call_method("add_", {cur, 1.0});
  b.output(b.call_function("_operator.mul", {cur, 1}));
  return b.build();
}

// Runs `fn` on a thread whose stack is `stack_bytes`; rethrows what it threw.
void on_small_stack(size_t stack_bytes, const std::function<void()>& fn) {
  struct Job {
    const std::function<void()>* fn;
    std::exception_ptr error;
  } job{&fn, nullptr};
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, stack_bytes), 0);
  pthread_t t;
  auto body = [](void* p) -> void* {
    Job* j = static_cast<Job*>(p);
    try {
      (*j->fn)();
    } catch (...) {
      j->error = std::current_exception();
    }
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&t, &attr, body, &job), 0);
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
  if (job.error) std::rethrow_exception(job.error);
}

// Compiles `g` (timed), runs it on `x` and returns its user output.
Tensor compile_and_run(const Graph& g, const Tensor& x, double* seconds) {
  auto t0 = std::chrono::steady_clock::now();
  CompiledProgram cp = compile(g, {x.clone()});
  *seconds = std::min(*seconds,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  Tensor in = x.clone();
  ExecutionContext ctx(cp.engine);
  ctx.bind_input(0, in);
  return ctx.execute()[0];
}

TEST(DeepGraph, TwentyThousandInPlaceOpsCompileOnAOneMiBStackAndMatchEager) {
  constexpr int kOps = 20000;
  const Tensor x = seeded_uniform({2, 3}, 5);
  EagerRun ref;
  std::vector<Tensor> outs;
  Tensor in = x.clone();
  std::string listing;
  on_small_stack(size_t{1} << 20, [&] {
    std::unique_ptr<Graph> g = inplace_chain(kOps);
    // The graph's own walks: the verifier, the listing, a JSON round trip.
    g->verify();
    listing = g->to_string();
    std::unique_ptr<Graph> back = read_graph_json_string(write_graph_json(*g));
    ref = run_reference(*back, {x});
    CompiledProgram cp = compile(*back, {x.clone()});
    std::shared_ptr<const Engine> loaded = deserialize_engine(serialize_engine(*cp.engine), "deep");
    ExecutionContext ctx(loaded);
    ctx.bind_input(0, in);
    outs = ctx.execute();
  });
  EXPECT_NE(listing.find("add__19999"), std::string::npos) << "the listing names every node";
  ASSERT_EQ(ref.outputs.size(), 1u);
  ASSERT_GE(outs.size(), 1u);
  EXPECT_TRUE(tensor_equal(outs[0], ref.outputs[0]));
  EXPECT_TRUE(tensor_equal(in, ref.inputs[0]));
  // x + 20000, row 0 doubled.
  EXPECT_FLOAT_EQ(in.data<float>()[0], (x.data<float>()[0] + kOps) * 2);
  EXPECT_FLOAT_EQ(in.data<float>()[3], x.data<float>()[3] + kOps);
}

TEST(DeepGraph, AWriteThroughTwentyThousandViewsCompilesOnAOneMiBStack) {
  constexpr int kViews = 20000;
  const Tensor x = seeded_uniform({2, 3}, 7);
  EagerRun ref;
  std::vector<Tensor> outs;
  Tensor in = x.clone();
  on_small_stack(size_t{1} << 20, [&] {
    std::unique_ptr<Graph> g = view_chain(kViews);
    ref = run_reference(*g, {x});
    CompiledProgram cp = compile(*g, {x.clone()});
    ExecutionContext ctx(cp.engine);
    ctx.bind_input(0, in);
    outs = ctx.execute();
  });
  ASSERT_EQ(ref.outputs.size(), 1u);
  ASSERT_GE(outs.size(), 1u);
  EXPECT_TRUE(tensor_equal(outs[0], ref.outputs[0]));
  EXPECT_TRUE(tensor_equal(in, ref.inputs[0]));
  EXPECT_FLOAT_EQ(in.data<float>()[1], x.data<float>()[1] + 1);
}

TEST(DeepGraph, LongChainsCompileToTheirValueAndTheirTimesAreLogged) {
  const Tensor x = seeded_uniform({2, 3}, 6);
  std::unique_ptr<Graph> g10 = inplace_chain(10000), g20 = inplace_chain(20000);
  // The faster of two runs each: the machine may be shared. Logged, not asserted: on a loaded
  // machine the ratio of two timings is too noisy to hold a bound.
  double t10 = 1e9, t20 = 1e9;
  Tensor y10, y20;
  for (int run = 0; run < 2; ++run) {
    y10 = compile_and_run(*g10, x, &t10);
    y20 = compile_and_run(*g20, x, &t20);
  }
  std::printf("compile: 10k in-place ops %.3f s, 20k %.3f s (ratio %.2f)\n", t10, t20, t20 / t10);
  EXPECT_FLOAT_EQ(y10.data<float>()[0], (x.data<float>()[0] + 10000) * 2);
  EXPECT_FLOAT_EQ(y20.data<float>()[4], x.data<float>()[4] + 20000);
}

}  // namespace
