#include "core/thread_pool.h"

#include <immintrin.h>

namespace inplace {

namespace {
thread_local ThreadPool* g_current_pool = nullptr;
constexpr int kSpinIterations = 20000;  // about 50-100 us of pause before sleeping
}  // namespace

ThreadPool* current_thread_pool() {
  return g_current_pool;
}

ScopedThreadPool::ScopedThreadPool(ThreadPool* pool) : previous_(g_current_pool) {
  g_current_pool = pool;
}
ScopedThreadPool::~ScopedThreadPool() {
  g_current_pool = previous_;
}

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::take_tasks() {
  for (;;) {
    const int64_t t = next_.fetch_add(1, std::memory_order_acq_rel);
    if (t >= tasks_) return;
    call_(fn_, t);
    done_.fetch_add(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run(int64_t tasks, Trampoline call, void* fn) {
  if (workers_.empty() || tasks <= 1) {
    for (int64_t t = 0; t < tasks; ++t) call(fn, t);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // A worker that joined the previous job late may still be looking at its counters.
    while (busy_.load(std::memory_order_acquire) != 0) _mm_pause();
    tasks_ = tasks;
    call_ = call;
    fn_ = fn;
    next_.store(0, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  {
    // A kernel inside a task that asks for the pool runs serially (workers never see it): one
    // job at a time.
    ScopedThreadPool serial(nullptr);
    take_tasks();
  }
  while (done_.load(std::memory_order_acquire) < tasks) _mm_pause();
}

void ThreadPool::work_loop() {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && spins < kSpinIterations) {
      _mm_pause();
      ++spins;
    }
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      seen = generation_.load(std::memory_order_acquire);
      if (stop_) return;
      busy_.fetch_add(1, std::memory_order_acq_rel);
    }
    take_tasks();
    busy_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace inplace
