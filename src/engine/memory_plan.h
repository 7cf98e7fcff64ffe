// Arena planning: intermediates whose lifetimes do not overlap share bytes.
#pragma once
#include <cstdint>
#include <vector>

namespace inplace {

struct BufferLifetime {
  int64_t nbytes = 0;
  int first_step = 0;  // the step that writes it
  int last_step = 0;   // the last step that reads it
};

struct MemoryPlan {
  std::vector<int64_t> offsets;  // bytes, per buffer
  int64_t arena_bytes = 0;
  int64_t naive_bytes = 0;  // sum of all buffer sizes, for reporting
};

// Greedy by size (largest first), each buffer at the lowest 64-byte aligned offset that does
// not collide with an already placed buffer whose lifetime overlaps.
MemoryPlan plan_memory(const std::vector<BufferLifetime>& buffers);

}  // namespace inplace
