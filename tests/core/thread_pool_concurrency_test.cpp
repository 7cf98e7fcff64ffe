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

}  // namespace
}  // namespace inplace
