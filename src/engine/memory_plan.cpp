#include "engine/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace inplace {

namespace {
constexpr int64_t kAlign = 64;
int64_t align_up(int64_t v) {
  return (v + kAlign - 1) / kAlign * kAlign;
}
}  // namespace

MemoryPlan plan_memory(const std::vector<BufferLifetime>& buffers) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].nbytes > buffers[b].nbytes; });
  std::vector<size_t> placed;
  for (size_t id : order) {
    const BufferLifetime& b = buffers[id];
    plan.naive_bytes += align_up(b.nbytes);
    // Intervals already taken by buffers alive at the same time, sorted by offset.
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (size_t o : placed) {
      const BufferLifetime& c = buffers[o];
      if (c.first_step <= b.last_step && b.first_step <= c.last_step)
        taken.emplace_back(plan.offsets[o], plan.offsets[o] + align_up(c.nbytes));
    }
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (auto [lo, hi] : taken) {
      if (offset + align_up(b.nbytes) <= lo) break;
      offset = std::max(offset, hi);
    }
    plan.offsets[id] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + align_up(b.nbytes));
    placed.push_back(id);
  }
  return plan;
}

}  // namespace inplace
