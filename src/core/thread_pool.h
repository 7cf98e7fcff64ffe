// A fixed pool of worker threads for the kernels of one execution context. Threads are created
// with the pool and live as long as it does: a call never creates a thread or allocates. Between
// jobs the workers spin briefly (a decode step issues a few dozen small jobs back to back), then
// sleep.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace inplace {

class ThreadPool {
 public:
  // `threads` in all, the calling thread included: threads - 1 workers.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(task) for every task in [0, tasks), the calling thread taking its share, and returns
  // when all are done. One job at a time (the caller's context serves one call at a time):
  // inside a task current_thread_pool() is null, so a kernel the task runs does its work serially.
  template <typename F>
  void parallel_for(int64_t tasks, F& fn) {
    run(
        tasks, [](void* f, int64_t t) { (*static_cast<F*>(f))(t); }, &fn);
  }

 private:
  using Trampoline = void (*)(void*, int64_t);
  void run(int64_t tasks, Trampoline call, void* fn);
  void work_loop();
  void take_tasks();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int64_t> next_{0}, done_{0};
  std::atomic<int> busy_{0};  // workers inside take_tasks
  int64_t tasks_ = 0;
  Trampoline call_ = nullptr;
  void* fn_ = nullptr;
  bool stop_ = false;
};

// The pool the kernels running on this thread may use; null (run serially) outside a call of a
// context that has one. ExecutionContext sets it for the duration of execute().
ThreadPool* current_thread_pool();

class ScopedThreadPool {
 public:
  explicit ScopedThreadPool(ThreadPool* pool);
  ~ScopedThreadPool();

 private:
  ThreadPool* previous_;
};

}  // namespace inplace
