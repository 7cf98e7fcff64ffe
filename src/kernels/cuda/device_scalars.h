// Runtime scalars evaluated on the device (docs/cuda.md, "Positions and extents on the
// device"). An engine on a GPU whose runtime values are only used as the end of a prefix view,
// `cache[:, :, :pos + 1]`, consumed as the keys and values of scaled_dot_product_attention,
// needs the host to know none of them: the views are planned (and refreshed) at their bound,
// a one-thread kernel evaluates the scalar programs into a device slot array, and the attention
// kernel reads its key count from the slot. Anything else keeps the host path (a small
// device-to-host read of the integer inputs per call).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/plan.h"
#include "kernels/cuda/device_runtime.h"

namespace inplace::cuda {

// The host value of a scalar used as a prefix end when the device evaluates it: past the end
// of any dim, so the view's refresh gives its bound (a slice end clamps to the dim).
constexpr int64_t kPrefixEndAtBound = int64_t(1) << 62;

struct DeviceScalarPlan {
  bool on_device = false;
  std::string why_not;           // when not on the device: the first reason (for `stats`)
  std::vector<int64_t> code;     // every scalar program: [n, (op, a, b) * n] per scalar
  std::vector<int> prefix_ends;  // scalars whose host value is kPrefixEndAtBound
  std::vector<int> step_extent;  // by step: the scalar holding its key count, or -1
};

// Decides whether `plan` (an engine on a GPU) can evaluate its scalars on the device, and
// encodes the programs when it can.
DeviceScalarPlan plan_device_scalars(const Plan& plan);

}  // namespace inplace::cuda
