// Threads and execution contexts: a context serves one call at a time and refuses a second,
// concurrent one with a clear error (never a race); many contexts on one engine, and compiles,
// run from many threads with the eager interpreter's results. scripts/tsan.sh runs this suite
// under ThreadSanitizer.
#include <atomic>
#include <chrono>
#include <thread>

#include "engine/contract_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

TEST(ContextConcurrency, SecondConcurrentCallOnOneContextIsRefused) {
  auto g = state_update_graph();
  Tensor state = Tensor::zeros({64, 64}, DType::kFloat32);
  Tensor x = Tensor::full({64, 64}, Scalar(1.0), DType::kFloat32);
  auto cp = compile_both(*g, {state, x}, /*alias=*/true);
  ExecutionContext ctx(cp.engine);
  ctx.bind_input(0, state);
  ctx.bind_input(1, x);
  std::atomic<int> ok{0}, refused{0}, other{0};
  std::atomic<bool> stop{false};
  std::string other_message;
  auto hammer = [&] {
    for (int k = 0; k < 20000 && !stop.load(); ++k) {
      try {
        ctx.execute();
        ok.fetch_add(1);
      } catch (const Error& e) {
        if (std::string(e.what()).find("one call at a time") != std::string::npos)
          refused.fetch_add(1);
        else if (other.fetch_add(1) == 0)
          other_message = e.what();
      }
      if (refused.load() >= 20 && ok.load() >= 200) stop.store(true);
    }
  };
  std::thread a(hammer), b(hammer);
  a.join();
  b.join();
  EXPECT_EQ(other.load(), 0) << other_message;
  EXPECT_GT(refused.load(), 0) << "two threads never collided in " << ok.load() << " calls";
  // Every call that ran added x once: the state shows exactly the calls that were served.
  for (double v : state.to_double_vector()) ASSERT_EQ(v, static_cast<double>(ok.load()));
}

TEST(ContextConcurrency, ManyContextsOnOneEngineMatchEager) {
  auto g = state_update_graph();
  for (bool alias : {true, false}) {
    auto cp = compile_both(
        *g, {Tensor::zeros({8, 8}, DType::kFloat32), Tensor::zeros({8, 8}, DType::kFloat32)},
        alias);
    constexpr int kThreads = 8, kCalls = 50;
    std::vector<std::string> failures(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        Tensor state = iota({8, 8}), x = Tensor::full({8, 8}, Scalar(t + 1.0), DType::kFloat32);
        Tensor ref_state = state.clone();
        ExecutionContext ctx(cp.engine);
        ctx.bind_input(0, state);
        ctx.bind_input(1, x);
        for (int k = 0; k < kCalls; ++k) {
          std::vector<Tensor> out = ctx.execute();
          std::vector<Tensor> ref = eager_outputs(*g, {"state", "x"}, {ref_state, x});
          if (!tensor_equal(out[0], ref[0]) || !tensor_equal(state, ref_state)) {
            failures[t] = str_cat("thread ", t, " call ", k, " differs from eager");
            return;
          }
        }
      });
    for (std::thread& th : threads) th.join();
    for (const std::string& f : failures) EXPECT_EQ(f, "") << (alias ? "aliased" : "copy-back");
  }
}

TEST(ContextConcurrency, CompileFromSeveralThreads) {
  auto g = state_update_graph();
  constexpr int kThreads = 4;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Tensor state = iota({4, 4}), x = Tensor::full({4, 4}, Scalar(t), DType::kFloat32);
      Tensor ref_state = state.clone();
      auto cp = compile_both(*g, {state, x}, t % 2 == 0);
      ExecutionContext ctx(cp.engine);
      ctx.bind_input(0, state);
      ctx.bind_input(1, x);
      std::vector<Tensor> out = ctx.execute();
      std::vector<Tensor> ref = eager_outputs(*g, {"state", "x"}, {ref_state, x});
      if (!tensor_equal(out[0], ref[0]) || !tensor_equal(state, ref_state))
        failures[t] = str_cat("thread ", t, " differs from eager");
    });
  for (std::thread& th : threads) th.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
}

}  // namespace
