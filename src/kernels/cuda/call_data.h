// What the CUDA executable lends its kernels for a step (KernelContext::backend): the
// context's scratch, its device error flag, and the step's key count when the device
// evaluates it. Null for a kernel called outside an executable (tests, the interpreter's
// device path): kernels then use their own scratch and report no deferred error.
#pragma once
#include <array>
#include <cstdint>
#include <memory>

#include "backend/kernel_table.h"
#include "core/error.h"
#include "core/storage.h"

namespace inplace::cuda {

// Device scratch that a context owns and lends to its kernels, in a few slots (kinds of scratch
// that may be in use at once: launch.h numbers them). A context's calls never overlap on the
// device and its steps run in order, so a kernel may use a slot as its own while it runs. A
// slot is allocated at its first request, which a context's first call (run directly, before
// any graph capture) makes; its address never changes after, as a captured graph needs.
class Workspace {
 public:
  static constexpr int kSlots = 4;
  explicit Workspace(Device device) : device_(device) {}
  // At least `bytes` in slot `slot` (< kSlots); a request larger than the slot's first is
  // refused (its address is fixed).
  void* get(int slot, size_t bytes) {
    IP_CHECK(slot >= 0 && slot < kSlots, kInternal, "[cuda] workspace slot ", slot,
             " out of range");
    std::shared_ptr<Storage>& m = memory_[slot];
    if (!m) m = Storage::allocate(bytes, device_);
    IP_CHECK(bytes <= m->nbytes(), kInternal, "[cuda] a kernel asked for ", bytes,
             " bytes of workspace slot ", slot, " after ", m->nbytes(), " (its address is fixed)");
    return m->data();
  }

 private:
  Device device_;
  std::array<std::shared_ptr<Storage>, kSlots> memory_;
};

struct CallData {
  // The context's error flag (int32[4] device memory, device_runtime.h) that index kernels set
  // for a position outside the indexed dim, naming KernelContext::step.
  int32_t* error = nullptr;
  // The step's key count as a device int64 (a runtime value evaluated on the device), when the
  // key and value operands are planned at their bound (device_scalars.h).
  const int64_t* key_count = nullptr;
  Workspace* workspace = nullptr;
};

inline const CallData* call_data(const KernelContext& c) {
  return static_cast<const CallData*>(c.backend);
}
inline int32_t* error_flag(const KernelContext& c) {
  return c.backend ? call_data(c)->error : nullptr;
}
inline const int64_t* key_count(const KernelContext& c) {
  return c.backend ? call_data(c)->key_count : nullptr;
}
inline Workspace* workspace(const KernelContext& c) {
  return c.backend ? call_data(c)->workspace : nullptr;
}

}  // namespace inplace::cuda
