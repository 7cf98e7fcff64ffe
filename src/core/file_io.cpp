#include "core/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/file_sink.h"

namespace inplace {

namespace {

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

// Opens without blocking (O_NONBLOCK: a FIFO without a writer does not hang the open) and
// checks what was opened, so the check and the read see the same file.
class File {
 public:
  File(const std::string& path, const char* tag) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    IP_CHECK(fd_ >= 0, kIO, "[", tag, "] cannot open '", path, "': ", std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      int err = errno;
      ::close(fd_);
      IP_FAIL(kIO, "[", tag, "] cannot stat '", path, "': ", std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd_);
      IP_FAIL(kIO, "[", tag, "] '", path, "' is ", kind_of(st.st_mode), ", not a regular file");
    }
    size_ = st.st_size;
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  int fd() const { return fd_; }
  off_t size() const { return size_; }

 private:
  int fd_ = -1;
  off_t size_ = 0;
};

// Makes a rename in the folder of `path` durable (best effort: a folder that cannot be opened or
// synced, as on some network file systems, leaves the rename as the kernel has it).
void sync_parent_dir(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

void check_regular_file(const std::string& path, const char* tag) {
  File f(path, tag);
}

std::string read_regular_file(const std::string& path, const char* tag) {
  File f(path, tag);
  std::string out;
  out.reserve(static_cast<size_t>(f.size()));
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(f.fd(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    IP_CHECK(n >= 0, kIO, "[", tag, "] cannot read '", path, "': ", std::strerror(errno));
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

int open_regular_file(const std::string& path, const char* tag, size_t* size) {
  File f(path, tag);
  *size = static_cast<size_t>(f.size());
  return f.release();
}

void write_file_atomically(const std::string& path, const char* tag,
                           const std::function<void(FileSink&)>& write) {
  static std::atomic<unsigned> counter{0};
  const std::string tmp =
      str_cat(path, ".tmp.", ::getpid(), ".", counter.fetch_add(1, std::memory_order_relaxed));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  IP_CHECK(fd >= 0, kIO, "[", tag, "] cannot open '", path, "' for writing (", tmp,
           "): ", std::strerror(errno));
  try {
    FileSink sink(fd, path, tag);
    write(sink);
    sink.flush();
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  // fsync before the rename: after a crash the path holds the old file or the whole new one,
  // never a renamed file whose data had not reached the disk.
  int err = ::fsync(fd) != 0 ? errno : 0;
  if (::close(fd) != 0 && !err) err = errno;
  if (!err && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err) {
    ::unlink(tmp.c_str());
    IP_FAIL(kIO, "[", tag, "] cannot write '", path, "': ", std::strerror(err));
  }
  sync_parent_dir(path);
}

void check_output_file(const std::string& path, const char* tag) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // does not exist yet (or cannot be seen)
  IP_CHECK(S_ISREG(st.st_mode), kIO, "[", tag, "] cannot write '", path, "': it is ",
           kind_of(st.st_mode), ", not a regular file");
}

}  // namespace inplace
