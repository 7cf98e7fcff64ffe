// The cpu backend's Executable: every step's kernel in order on the calling thread (with the
// context's thread pool, when it has one); nothing is in flight when a call returns, so there
// is no queue, no deferred error and nothing recorded. A step marked to run on the host (only
// a test marks one on a cpu engine) goes through run_host_step's copies like any backend's.
#include <cstring>
#include <exception>
#include <map>
#include <string>

#include "backend/backend.h"
#include "backend/host_step.h"
#include "kernels/cpu/blas_loader.h"
#include "kernels/cpu/registration.h"

namespace inplace::cpu {

namespace {

class CpuExecutable final : public Executable {
 public:
  explicit CpuExecutable(const PreparedSteps& steps) : steps_(steps) {}

  void begin_call(void*) override {}
  void run(const RunCall&, CallObserver& observer) override {
    const size_t n = steps_.plan->steps.size();
    const bool profiling = observer.profiling();
    for (size_t q = 0; q < n; ++q) {
      const int64_t t0 = profiling ? now_ns() : 0;
      KernelContext c;
      c.step = static_cast<int32_t>(q);
      try {
        if (steps_.plan->steps[q].on_host)
          run_host_step(steps_, q, backend_for(steps_.device), nullptr);
        else
          run_step(steps_, q, c);
      } catch (const Error& e) {
        observer.failed(q, q, e);
      }
      if (profiling) observer.step_time(q, now_ns() - t0);
    }
  }
  void check_errors(bool) override {}
  Tensor copy(const Tensor& t) override { return t.clone(); }
  bool evaluates_scalars() const override { return false; }
  const std::map<int, int64_t>& fixed_scalars() const override { return none_; }
  bool host_reads_inputs() const override { return true; }
  void set_option(const std::string& key, const std::string&) override {
    IP_FAIL(kInvalidArgument, "[cpu] unknown backend option '", key,
            "'; the cpu backend takes none");
  }
  std::map<std::string, int64_t> counters() const override { return {}; }

 private:
  PreparedSteps steps_;
  std::map<int, int64_t> none_;
};

class CpuBackend final : public Backend {
 public:
  std::unique_ptr<Executable> prepare(const PreparedSteps& steps) const override {
    return std::make_unique<CpuExecutable>(steps);
  }
  void copy_async(void* dst, const void* src, size_t nbytes, void*) const override {
    if (nbytes) std::memcpy(dst, src, nbytes);
  }
  std::vector<std::string> options() const override { return {}; }
  void set_process_option(const std::string& key, const std::string& value) const override {
    IP_CHECK(key == "blas_threads", kInvalidArgument, "[cpu] unknown process option '", key,
             "'; the cpu backend takes blas_threads=N");
    int threads = 0;
    try {
      threads = std::stoi(value);
    } catch (const std::exception&) {
    }
    IP_CHECK(threads >= 1, kInvalidArgument,
             "[cpu] blas_threads takes a thread count of at least 1, got '", value, "'");
    set_blas_threads(threads);  // now, or when OpenBLAS loads, if it ever does
  }
  void* create_queue() const override { return nullptr; }
  void destroy_queue(void*) const override {}
  void synchronize(void*) const override {}
  void order_after(void*, void*) const override {}
};

}  // namespace

std::unique_ptr<Backend> make_backend() {
  return std::make_unique<CpuBackend>();
}

}  // namespace inplace::cpu
