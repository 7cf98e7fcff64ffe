// Bytes a tensor views: owned (allocated here) or borrowed (a caller's pointer, never freed
// here). Borrowed storage is the basis of aliased I/O: the engine writes the caller's memory.
// A borrowed storage may keep its bytes' owner alive (`keep_alive`): weights loaded from a
// memory-mapped engine file point into the mapping, which lives as long as any of them.
#pragma once
#include <cstddef>
#include <memory>

#include "core/device.h"

namespace inplace {

class Storage {
 public:
  static constexpr size_t kAlignment = 64;

  // Zero-filled, 64-byte aligned, on `device` (through its DeviceAllocator).
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device = Device::cpu());
  static std::shared_ptr<Storage> borrow(void* data, size_t nbytes, Device device = Device::cpu());
  // Borrowed bytes that `keep_alive` owns (held until this storage is destroyed).
  static std::shared_ptr<Storage> borrow(void* data, size_t nbytes,
                                         std::shared_ptr<const void> keep_alive,
                                         Device device = Device::cpu());

  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  bool owned() const { return owned_; }
  Device device() const { return device_; }

  // Points a borrowed storage at new caller memory (execution contexts rebind per call).
  void rebind(void* data, size_t nbytes);

 private:
  Storage(void* data, size_t nbytes, bool owned, Device device)
      : data_(data), nbytes_(nbytes), owned_(owned), device_(device) {}
  void* data_;
  size_t nbytes_;
  bool owned_;
  Device device_;
  std::shared_ptr<const void> keep_alive_;
};

}  // namespace inplace
