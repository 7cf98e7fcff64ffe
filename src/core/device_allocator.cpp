#include "core/device_allocator.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace inplace {

namespace {

constexpr size_t kAlignment = 64;

class CpuAllocator final : public DeviceAllocator {
 public:
  void* allocate(Device, size_t nbytes) const override {
    size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    if (rounded == 0) rounded = kAlignment;
    void* p = std::aligned_alloc(kAlignment, rounded);
    IP_CHECK(p != nullptr, kOutOfRange, "[storage] cannot allocate ", nbytes, " bytes");
    std::memset(p, 0, rounded);
    return p;
  }
  void release(Device, void* data) const override { std::free(data); }
  void copy_to_host(void* host, const void* src, size_t n) const override {
    if (n) std::memcpy(host, src, n);
  }
  void copy_from_host(void* dst, const void* host, size_t n) const override {
    if (n) std::memcpy(dst, host, n);
  }
  void copy_on_device(void* dst, const void* src, size_t n) const override {
    if (n) std::memmove(dst, src, n);
  }
};

std::array<std::atomic<const DeviceAllocator*>, kNumDeviceTypes>& table() {
  static const CpuAllocator cpu;
  static std::array<std::atomic<const DeviceAllocator*>, kNumDeviceTypes> t{&cpu, nullptr};
  static_assert(static_cast<int>(DeviceType::kCpu) == 0, "the cpu allocator is entry 0");
  return t;
}

}  // namespace

void register_device_allocator(DeviceType type, const DeviceAllocator* allocator) {
  table()[static_cast<int>(type)].store(allocator);
}

bool has_device_allocator(DeviceType type) {
  return table()[static_cast<int>(type)].load() != nullptr;
}

const DeviceAllocator& device_allocator(Device device) {
  const DeviceAllocator* a = table()[static_cast<int>(device.type)].load();
  IP_CHECK(a != nullptr, kUnsupported, "[device] no backend serves device '", device.str(),
           "' in this build (built without CUDA, or no GPU is present)");
  return *a;
}

}  // namespace inplace
