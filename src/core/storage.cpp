#include "core/storage.h"

#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace inplace {

std::shared_ptr<Storage> Storage::allocate(size_t nbytes) {
  size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  IP_CHECK(p != nullptr, kOutOfRange, "[storage] cannot allocate ", nbytes, " bytes");
  std::memset(p, 0, rounded);
  return std::shared_ptr<Storage>(new Storage(p, nbytes, true));
}

std::shared_ptr<Storage> Storage::borrow(void* data, size_t nbytes) {
  return std::shared_ptr<Storage>(new Storage(data, nbytes, false));
}

Storage::~Storage() {
  if (owned_) std::free(data_);
}

void Storage::rebind(void* data, size_t nbytes) {
  IP_ASSERT(!owned_, "only borrowed storage is rebound");
  data_ = data;
  nbytes_ = nbytes;
}

}  // namespace inplace
