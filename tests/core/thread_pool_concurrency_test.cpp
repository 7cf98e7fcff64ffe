#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace inplace {
namespace {

TEST(ThreadPoolConcurrency, EveryTaskRunsExactlyOnceOverManyJobs) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    std::vector<std::atomic<int>> hits(37);
    for (int job = 0; job < 2000; ++job) {
      const int64_t tasks = job % 37 + 1;
      auto fn = [&](int64_t t) { hits[static_cast<size_t>(t)].fetch_add(1); };
      pool.parallel_for(tasks, fn);
    }
    for (size_t t = 0; t < hits.size(); ++t) {
      int want = 0;
      for (int job = 0; job < 2000; ++job) want += static_cast<int>(t) < job % 37 + 1;
      EXPECT_EQ(hits[t].load(), want) << "task " << t << " with " << threads << " threads";
    }
  }
}

TEST(ThreadPoolConcurrency, TheCurrentPoolIsScoped) {
  ThreadPool pool(2);
  EXPECT_EQ(current_thread_pool(), nullptr);
  {
    ScopedThreadPool use(&pool);
    EXPECT_EQ(current_thread_pool(), &pool);
  }
  EXPECT_EQ(current_thread_pool(), nullptr);
}

TEST(ThreadPoolConcurrency, AJobInsideATaskRunsSerially) {
  // A kernel that a task runs and that asks for the pool (a product inside a split attention)
  // sees none: it runs its work on the task's thread instead of starting a second job.
  ThreadPool pool(3);
  ScopedThreadPool use(&pool);
  std::vector<std::atomic<int>> inner(8 * 5);
  auto outer = [&](int64_t t) {
    EXPECT_EQ(current_thread_pool(), nullptr) << "task " << t;
    for (int64_t u = 0; u < 5; ++u) inner[static_cast<size_t>(t * 5 + u)].fetch_add(1);
  };
  for (int job = 0; job < 200; ++job) pool.parallel_for(8, outer);
  for (const auto& n : inner) EXPECT_EQ(n.load(), 200);
  EXPECT_EQ(current_thread_pool(), &pool);  // the caller's scope again after the job
}

}  // namespace
}  // namespace inplace
