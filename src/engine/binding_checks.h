// The runtime contract of ExecutionContext, checked at bind and execute (docs/engine.md, "The
// runtime contract"): one call at a time per context, no binding the engine writes
// overlapping the memory of another binding, and no call after a failed one left caller
// tensors partly updated until they are rebound or the context is reset.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/plan.h"

namespace inplace {

// Marks a context busy for the length of one call (execute, bind_*, reset). A second call
// while one is in flight, from another thread, throws kInvalidArgument instead of racing.
class InFlightGuard {
 public:
  InFlightGuard(std::atomic<bool>& flag, const char* call, const std::string& engine_name);
  ~InFlightGuard() { flag_.store(false, std::memory_order_release); }
  InFlightGuard(const InFlightGuard&) = delete;
  InFlightGuard& operator=(const InFlightGuard&) = delete;

 private:
  std::atomic<bool>& flag_;
};

// The bytes a tensor's elements occupy, [lo, hi) (empty for a tensor with no elements).
struct MemorySpan {
  uintptr_t lo = 0, hi = 0;
  bool empty() const { return lo == hi; }
  bool overlaps(const MemorySpan& o) const {
    return !empty() && !o.empty() && lo < o.hi && o.lo < hi;
  }
};
MemorySpan memory_span(const Tensor& t);

// One caller tensor bound to the context, for the overlap check (no strings are built unless
// it fails).
struct BoundMemory {
  const char* kind;         // "input", "output"
  const std::string* name;  // the binding's name
  MemorySpan span;
  bool written = false;  // the engine writes it (a mutated input, a bound output)
};
// Throws kInvalidArgument naming both bindings when a written binding overlaps any other.
// Read-only bindings may share memory. O(bindings^2) on byte ranges, nothing per element.
void check_binding_overlaps(const std::vector<BoundMemory>& bound);
// The same for bound[0, first) against bound[first, end) only (bindings bound again since a
// full check, against the written ones).
void check_overlaps_with(const std::vector<BoundMemory>& bound, size_t first);

}  // namespace inplace
