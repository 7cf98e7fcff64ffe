// Where the bytes of an engine or program file go while it is written: appended to a string, or
// written to an open file descriptor through a small buffer. Either way the running checksum
// (core/checksum.h) of everything written is kept, so a file is written piece by piece (weights
// straight from their tensors) and never assembled whole in memory first.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/checksum.h"

namespace inplace {

class FileSink {
 public:
  // Into `out`; pos() counts from `base` (the file offset of the first byte written here).
  explicit FileSink(std::string* out, size_t base = 0);
  // To `fd` (not closed here); errors name `path` and `tag`.
  FileSink(int fd, std::string path, const char* tag);
  ~FileSink();
  FileSink(const FileSink&) = delete;
  FileSink& operator=(const FileSink&) = delete;

  void write(const void* data, size_t nbytes);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  void zeros(size_t nbytes);
  size_t pos() const { return pos_; }
  // Appends the checksum of every byte written so far (8 bytes, little-endian) and flushes.
  void finish();
  // Writes out what the buffer holds (a file sink; nothing for a string).
  void flush();

 private:
  std::string* out_ = nullptr;
  int fd_ = -1;
  std::string path_;
  const char* tag_ = "";
  std::string buffer_;
  size_t pos_ = 0;
  Checksum64 sum_;
};

}  // namespace inplace
