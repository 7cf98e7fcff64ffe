#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/file_io.h"

namespace inplace {

namespace {

// Closes the descriptor and unmaps the buffer unless released.
struct Pending {
  int fd = -1;
  void* p = nullptr;
  size_t mapped = 0;
  ~Pending() {
    if (fd >= 0) ::close(fd);
    if (p) ::munmap(p, mapped);
  }
};

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path, const char* tag) {
  size_t size = 0;
  Pending g;
  g.fd = open_regular_file(path, tag, &size);
  if (size == 0) return std::shared_ptr<const MappedFile>(new MappedFile(nullptr, 0, 0, path));
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  g.mapped = (size + page - 1) / page * page;
  void* p = ::mmap(nullptr, g.mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  const int map_err = errno;
  IP_CHECK(p != MAP_FAILED, kIO, "[", tag, "] cannot allocate ", size, " bytes to read '", path,
           "': ", std::strerror(map_err));
  g.p = p;
  // No MADV_HUGEPAGE: with the kernel's default defrag it stalls on compaction (medium's 634 MB
  // took 0.2-2.3 s against a steady 0.25-0.4 s without it).
  ::posix_fadvise(g.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  char* dst = static_cast<char*>(p);
  size_t done = 0;
  while (done < size) {
    // read() moves at most about 2 GiB a call on Linux; ask for less so every call is whole.
    const size_t want = std::min<size_t>(size - done, size_t{1} << 30);
    ssize_t n = ::pread(g.fd, dst + done, want, static_cast<off_t>(done));
    const int read_err = errno;
    if (n < 0 && read_err == EINTR) continue;
    IP_CHECK(n >= 0, kIO, "[", tag, "] cannot read '", path, "': ", std::strerror(read_err));
    IP_CHECK(n > 0, kIO, "[", tag, "] '", path, "' changed while being read: ", size,
             " bytes when opened, ", done, " when read (truncated by another process?)");
    done += static_cast<size_t>(n);
  }
  // Read-only from here: a stray write faults instead of changing a loaded engine's weights.
  const int protect_err = ::mprotect(p, g.mapped, PROT_READ) == 0 ? 0 : errno;
  IP_CHECK(protect_err == 0, kIO, "[", tag, "] cannot protect the ", size, " bytes read from '",
           path, "': ", std::strerror(protect_err));
  std::unique_ptr<const MappedFile> out(
      new MappedFile(static_cast<const char*>(p), size, g.mapped, path));
  g.p = nullptr;  // owned by `out` now
  return out;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<char*>(data_), mapped_);
}

}  // namespace inplace
