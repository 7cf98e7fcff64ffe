#include "engine/binding_checks.h"

namespace inplace {

InFlightGuard::InFlightGuard(std::atomic<bool>& flag, const char* call,
                             const std::string& engine_name)
    : flag_(flag) {
  IP_CHECK(!flag_.exchange(true, std::memory_order_acq_rel), kInvalidArgument, "[", call,
           "] execution context of engine '", engine_name,
           "' is already in a call on another thread; a context serves one call at a time "
           "(create one context per thread)");
}

MemorySpan memory_span(const Tensor& t) {
  if (!t.defined() || t.is_meta() || t.numel() == 0) return {};
  const auto base = reinterpret_cast<uintptr_t>(t.data_ptr());
  const auto item = static_cast<intptr_t>(t.itemsize());
  intptr_t lo = 0, hi = 0;
  for (size_t d = 0; d < t.shape().size(); ++d) {
    intptr_t reach = static_cast<intptr_t>((t.shape()[d] - 1) * t.strides()[d]) * item;
    (reach < 0 ? lo : hi) += reach;
  }
  return {base + lo, base + hi + item};
}

namespace {

void check_pair(const BoundMemory& x, const BoundMemory& y) {
  if (!(x.written || y.written) || !x.span.overlaps(y.span)) return;
  const BoundMemory& w = x.written ? x : y;
  const BoundMemory& o = x.written ? y : x;
  IP_FAIL(kInvalidArgument, "[execute] ", w.kind, " '", *w.name, "' overlaps the memory of ",
          o.kind, " '", *o.name, "'; the engine writes ", w.kind, " '", *w.name,
          "', so it must not share memory with another binding (bind separate tensors)");
}

}  // namespace

void check_binding_overlaps(const std::vector<BoundMemory>& bound) {
  for (size_t a = 0; a < bound.size(); ++a)
    for (size_t b = a + 1; b < bound.size(); ++b) check_pair(bound[a], bound[b]);
}

void check_overlaps_with(const std::vector<BoundMemory>& bound, size_t first) {
  for (size_t a = 0; a < first; ++a)
    for (size_t b = first; b < bound.size(); ++b) check_pair(bound[a], bound[b]);
}

}  // namespace inplace
