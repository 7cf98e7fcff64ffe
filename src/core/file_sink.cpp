#include "core/file_sink.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace inplace {

namespace {
constexpr size_t kBufferBytes = 1 << 20;
}

FileSink::FileSink(std::string* out, size_t base) : out_(out), pos_(base) {}

FileSink::FileSink(int fd, std::string path, const char* tag)
    : fd_(fd), path_(std::move(path)), tag_(tag) {
  buffer_.reserve(kBufferBytes);
}

FileSink::~FileSink() = default;

void FileSink::write(const void* data, size_t nbytes) {
  if (!nbytes) return;
  sum_.update(data, nbytes);
  pos_ += nbytes;
  if (out_) {
    out_->append(static_cast<const char*>(data), nbytes);
    return;
  }
  if (buffer_.size() + nbytes <= kBufferBytes) {
    buffer_.append(static_cast<const char*>(data), nbytes);
    return;
  }
  flush();
  if (nbytes <= kBufferBytes) {
    buffer_.append(static_cast<const char*>(data), nbytes);
    return;
  }
  const char* p = static_cast<const char*>(data);
  while (nbytes) {
    ssize_t n = ::write(fd_, p, nbytes);
    if (n < 0 && errno == EINTR) continue;
    IP_CHECK(n >= 0, kIO, "[", tag_, "] cannot write '", path_, "': ", std::strerror(errno));
    p += n;
    nbytes -= static_cast<size_t>(n);
  }
}

void FileSink::zeros(size_t nbytes) {
  static const char kZeros[4096] = {};
  while (nbytes) {
    size_t n = nbytes < sizeof kZeros ? nbytes : sizeof kZeros;
    write(kZeros, n);
    nbytes -= n;
  }
}

void FileSink::flush() {
  if (out_) return;
  const char* p = buffer_.data();
  size_t left = buffer_.size();
  while (left) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    IP_CHECK(n >= 0, kIO, "[", tag_, "] cannot write '", path_, "': ", std::strerror(errno));
    p += n;
    left -= static_cast<size_t>(n);
  }
  buffer_.clear();
}

void FileSink::finish() {
  uint64_t sum = sum_.digest();
  char bytes[8];
  std::memcpy(bytes, &sum, 8);  // host order is little-endian on every supported target
  pos_ += 8;
  if (out_)
    out_->append(bytes, 8);
  else {
    buffer_.append(bytes, 8);
    flush();
  }
}

}  // namespace inplace
