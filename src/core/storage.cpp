#include "core/storage.h"

#include "core/device_allocator.h"
#include "core/error.h"

namespace inplace {

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  void* p = device_allocator(device).allocate(device, nbytes);
  return std::shared_ptr<Storage>(new Storage(p, nbytes, true, device));
}

std::shared_ptr<Storage> Storage::borrow(void* data, size_t nbytes, Device device) {
  return std::shared_ptr<Storage>(new Storage(data, nbytes, false, device));
}

std::shared_ptr<Storage> Storage::borrow(void* data, size_t nbytes,
                                         std::shared_ptr<const void> keep_alive, Device device) {
  std::shared_ptr<Storage> s(new Storage(data, nbytes, false, device));
  s->keep_alive_ = std::move(keep_alive);
  return s;
}

Storage::~Storage() {
  if (owned_) device_allocator(device_).release(device_, data_);
}

void Storage::rebind(void* data, size_t nbytes) {
  IP_ASSERT(!owned_, "only borrowed storage is rebound");
  data_ = data;
  nbytes_ = nbytes;
}

}  // namespace inplace
