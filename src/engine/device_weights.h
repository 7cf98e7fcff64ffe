// Weights uploaded to a device once for every engine built with the same DeviceWeights: the
// methods of a program read one copy on the device, as they share one on the host. An engine
// off the host uploads each constant's whole storage (so element offsets stay valid); with a
// DeviceWeights, a storage over host memory already uploaded (the same address and size) is
// the one copy, held as long as some engine holds it.
#pragma once
#include <memory>
#include <mutex>
#include <vector>

#include "core/storage.h"

namespace inplace {

class DeviceWeights {
 public:
  // The copy of `host` on `device`, uploaded on first use.
  std::shared_ptr<Storage> upload(const std::shared_ptr<Storage>& host, Device device);
  // Copies made (each distinct host storage once while some engine holds it): tests use it.
  int64_t uploads() const { return uploads_; }

 private:
  struct Entry {
    std::shared_ptr<Storage> host;  // held: its address stays this entry's key
    Device device;
    std::weak_ptr<Storage> copy;
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;
  int64_t uploads_ = 0;
};

// Uploads `host` to `device` without sharing (an engine built without a DeviceWeights).
std::shared_ptr<Storage> upload_storage(const std::shared_ptr<Storage>& host, Device device);

}  // namespace inplace
