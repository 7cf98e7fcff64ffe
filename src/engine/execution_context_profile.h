// Per-op time of a context's calls, for finding where a step's time goes: set INPLACE_PROFILE=1
// and every ExecutionContext created afterwards times each step of each call (one clock read per
// step) and prints, when it is destroyed, the total per op and per step kind to stderr, sorted by
// time. Off (one branch per step) when the variable is unset.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace inplace {

struct Plan;

class StepProfile {
 public:
  // Enabled when INPLACE_PROFILE is set to anything but "0".
  static bool requested();

  explicit StepProfile(const Plan& plan);
  ~StepProfile();  // prints the summary
  StepProfile(const StepProfile&) = delete;
  StepProfile& operator=(const StepProfile&) = delete;

  static int64_t now_ns();
  // The phases before the first step: 0 checks, 1 outputs, 2 refresh, 3 positions.
  static constexpr int kPhases = 4;
  int64_t start_call() { return mark_ = now_ns(); }
  void mark(int phase) {
    const int64_t t = now_ns();
    phase_ns_[phase] += t - mark_;
    mark_ = t;
  }
  void add_step(size_t step, int64_t ns) { step_ns_[step] += ns; }
  void add_refresh(size_t step, int64_t ns) { refresh_ns_[step] += ns; }
  void add_call(int64_t total_ns, int64_t before_steps_ns) {
    ++calls_;
    call_ns_ += total_ns;
    prologue_ns_ += before_steps_ns;
  }

 private:
  std::string engine_name_;
  std::vector<std::string> labels_;            // per step: "op (kind)"
  std::vector<int64_t> step_ns_, refresh_ns_;  // per step: its kernel, its refresh
  int64_t phase_ns_[kPhases] = {}, mark_ = 0;
  int64_t calls_ = 0, call_ns_ = 0, prologue_ns_ = 0;
};

}  // namespace inplace
