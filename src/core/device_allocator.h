// The memory of one device type: allocation, release and byte copies to and from the host.
// The CPU allocator is built in; a GPU backend registers its own at start-up
// (backend/backends.h), so core never depends on a device library.
#pragma once
#include <cstddef>

#include "core/device.h"

namespace inplace {

class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  // Zero-filled, at least 64-byte aligned; throws naming the device and the size on failure.
  virtual void* allocate(Device device, size_t nbytes) const = 0;
  virtual void release(Device device, void* data) const = 0;
  // Synchronous byte copies between this device and the host, or within this device.
  virtual void copy_to_host(void* host, const void* device_data, size_t nbytes) const = 0;
  virtual void copy_from_host(void* device_data, const void* host, size_t nbytes) const = 0;
  virtual void copy_on_device(void* dst, const void* src, size_t nbytes) const = 0;
};

// Set once per device type during start-up registration (backend/backends.cpp).
void register_device_allocator(DeviceType type, const DeviceAllocator* allocator);
// The allocator of `device`; an error naming the device when no backend serves it.
const DeviceAllocator& device_allocator(Device device);
bool has_device_allocator(DeviceType type);

}  // namespace inplace
