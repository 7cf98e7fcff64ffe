// Steps that run on the host in an engine of another device (Step::on_host): an op the engine's
// device has no kernel for, or whose kernel refuses the step's arguments, runs on the cpu with
// the copies it needs instead of refusing the program (docs/engine.md, "Steps on the host").
// CompileOptions::strict_device keeps the refusal.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/kernel_table.h"
#include "backend/plan.h"

namespace inplace {

struct HostStep {
  size_t step = 0;
  std::string node, op;  // the node and the op's full name
  std::string why;       // why the device cannot run it
  int64_t bytes = 0;     // moved per call between the device and the host (host_step_bytes)
};

// Why `device`'s kernels cannot run step `s` ("" when they can): "has no kernel for device
// 'D'", perhaps with " for these arguments: <the kernel's refusal>" (asked over metas).
// Only kOut and kEager steps ask.
std::string why_not_on_device(const KernelTable& table, const Step& s, Device device);

// Marks every step of `plan` that its device cannot run to run on the host, and returns them.
// With `strict`, refuses the first such step instead, naming the node and the op. A cpu plan
// has every kernel and is left as it is.
std::vector<HostStep> place_on_host(Plan& plan, bool strict);

// The steps `plan` runs on the host, each with why and what it moves.
std::vector<HostStep> host_steps(const Plan& plan);

// One line per step ("node 'y': op 'cumsum' has no kernel for device 'D'; runs on the
// host, moving 32 bytes per call"), then a line with the total and what the device's backend
// adds, each line led by `prefix`; "" for none.
std::string describe_host_steps(const Plan& plan, const std::vector<HostStep>& steps,
                                const std::string& prefix = "");

}  // namespace inplace
