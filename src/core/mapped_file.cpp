#include "core/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/file_io.h"

namespace inplace {

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path, const char* tag) {
  size_t size = 0;
  const int fd = open_regular_file(path, tag, &size);
  if (size == 0) {
    ::close(fd);
    return std::shared_ptr<const MappedFile>(new MappedFile(nullptr, 0, path));
  }
  // MAP_POPULATE reads the whole file in ahead (the loader checksums every byte at once).
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping holds its own reference to the file
  IP_CHECK(p != MAP_FAILED, kIO, "[", tag, "] cannot map '", path, "' (", size,
           " bytes): ", std::strerror(err));
  try {
    return std::shared_ptr<const MappedFile>(
        new MappedFile(static_cast<const char*>(p), size, path));
  } catch (...) {
    ::munmap(p, size);
    throw;
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<char*>(data_), size_);
}

}  // namespace inplace
