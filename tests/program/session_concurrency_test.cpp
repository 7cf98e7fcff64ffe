// Sessions on several threads: each thread runs its own sessions over one shared program and
// gets exactly what the same sessions give run one after the other; a second concurrent call
// on one session is refused. scripts/tsan.sh runs this suite under ThreadSanitizer.
#include <atomic>
#include <thread>

#include "program/program_test_util.h"
#include "test_util.h"

using namespace inplace;
using namespace inplace::testing;

namespace {

std::vector<std::vector<Tensor>> run_calls(Session& s, const std::vector<Call>& calls) {
  std::vector<std::vector<Tensor>> out;
  for (const Call& c : calls) out.push_back(s.run(c.method, c.inputs));
  return out;
}

bool same(const std::vector<std::vector<Tensor>>& a, const std::vector<std::vector<Tensor>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t c = 0; c < a.size(); ++c) {
    if (a[c].size() != b[c].size()) return false;
    for (size_t j = 0; j < a[c].size(); ++j)
      if (!tensor_equal(a[c][j], b[c][j])) return false;
  }
  return true;
}

TEST(SessionConcurrency, SessionsOnSeveralThreadsEqualSequentialSessions) {
  DecoderGraphs g = decoder_graphs(false);
  auto program = decoder_program(g, false);
  constexpr int kThreads = 4;
  std::vector<std::vector<Call>> scripts;
  std::vector<std::vector<std::vector<Tensor>>> want;
  std::vector<Tensor> want_cache;
  for (int t = 0; t < kThreads; ++t) {
    scripts.push_back(conversation(1 + t, 3, 100 + 10 * static_cast<uint32_t>(t)));
    auto s = program->new_session();
    want.push_back(run_calls(*s, scripts[t]));
    want_cache.push_back(s->state("layers.0.k_cache").clone());
  }
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int round = 0; round < 3; ++round) {
          auto s = program->new_session();
          if (!same(run_calls(*s, scripts[t]), want[t]) ||
              !tensor_equal(s->state("layers.0.k_cache"), want_cache[t]))
            failures[t] = str_cat("thread ", t, " round ", round, " differs from sequential");
          s->reset();
          if (!same(run_calls(*s, scripts[t]), want[t]))
            failures[t] = str_cat("thread ", t, " round ", round, " differs after reset");
        }
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  for (std::thread& th : threads) th.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
}

TEST(SessionConcurrency, SecondConcurrentCallOnOneSessionIsRefused) {
  DecoderGraphs g = decoder_graphs(false);
  auto program = decoder_program(g, false);
  auto session = program->new_session();
  std::atomic<int> ok{0}, refused{0};
  std::atomic<bool> stop{false};
  std::string other;
  std::atomic<bool> other_set{false};
  const std::map<std::string, Tensor> in = {{"q", seeded_uniform({1, 1, 1, kDim}, 1)}};
  auto hammer = [&] {
    for (int k = 0; k < 200000 && !stop.load(); ++k) {
      try {
        session->run("peek", in);
        ok.fetch_add(1);
      } catch (const Error& e) {
        if (std::string(e.what()).find("one call at a time") != std::string::npos) {
          refused.fetch_add(1);
        } else if (!other_set.exchange(true)) {
          other = e.what();
        }
      }
      if (refused.load() >= 20 && ok.load() >= 200) stop.store(true);
    }
  };
  std::thread a(hammer), b(hammer);
  a.join();
  b.join();
  EXPECT_FALSE(other_set.load()) << other;
  EXPECT_GT(refused.load(), 0) << "two threads never collided in " << ok.load() << " calls";
  EXPECT_GT(ok.load(), 0);
  // The session is still usable and its state intact afterwards.
  EXPECT_EQ(session->run("peek", in).size(), 1u);
}

}  // namespace
