#include "engine/execution_context_profile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "backend/plan.h"
#include "ops/registry.h"

namespace inplace {

bool StepProfile::requested() {
  const char* v = std::getenv("INPLACE_PROFILE");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

int64_t StepProfile::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

StepProfile::StepProfile(const Plan& plan)
    : step_ns_(plan.steps.size(), 0), refresh_ns_(plan.steps.size(), 0) {
  for (const Step& s : plan.steps) {
    const char* kind = s.kind == StepKind::kOut    ? "out"
                       : s.kind == StepKind::kCopy ? "copy"
                       : s.kind == StepKind::kView ? "view"
                                                   : "eager";
    labels_.push_back((s.op ? s.op->schema.full_name() : std::string("?")) + " (" + kind + ")");
  }
}

StepProfile::~StepProfile() {
  if (calls_ == 0) return;
  std::map<std::string, std::pair<int64_t, int64_t>> by_op;  // label -> (ns, steps)
  int64_t steps_ns = 0;
  for (size_t q = 0; q < labels_.size(); ++q) {
    auto& e = by_op[labels_[q]];
    e.first += step_ns_[q];
    e.second += 1;
    steps_ns += step_ns_[q];
    if (refresh_ns_[q] > 0) {
      auto& r = by_op["refresh of " + labels_[q]];
      r.first += refresh_ns_[q];
      r.second += 1;
    }
  }
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> rows(by_op.begin(), by_op.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  const double per_call = 1e3 * static_cast<double>(calls_);  // ns -> us per call
  std::fprintf(stderr, "inplace profile: %lld calls, %.1f us per call (%zu steps)\n",
               static_cast<long long>(calls_), static_cast<double>(call_ns_) / per_call,
               labels_.size());
  std::fprintf(stderr,
               "  %10.1f us  before the first step:", static_cast<double>(prologue_ns_) / per_call);
  const char* phases[kPhases] = {"checks", "outputs", "refresh", "positions"};
  for (int i = 0; i < kPhases; ++i)
    std::fprintf(stderr, " %s %.1f us%s", phases[i], static_cast<double>(phase_ns_[i]) / per_call,
                 i + 1 < kPhases ? "," : "\n");
  std::fprintf(stderr, "  %10.1f us  after the steps and between them\n",
               static_cast<double>(call_ns_ - prologue_ns_ - steps_ns) / per_call);
  for (const auto& [label, e] : rows)
    std::fprintf(stderr, "  %10.1f us  %5.1f%%  x%-4lld %s\n",
                 static_cast<double>(e.first) / per_call,
                 100.0 * static_cast<double>(e.first) / static_cast<double>(call_ns_),
                 static_cast<long long>(e.second), label.c_str());
}

}  // namespace inplace
