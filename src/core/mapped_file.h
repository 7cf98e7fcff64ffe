// A regular file mapped read-only into memory (mmap, PROT_READ, MAP_PRIVATE), unmapped when the
// last reference goes. Loading an engine or program file maps it and lets the weights point
// into the mapping: load time and memory are about the file itself, and pages the kernel can
// drop are the file's own. The file must not be truncated or rewritten in place while mapped
// (save_engine replaces a file by renaming a new one over it, which is safe).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace inplace {

class MappedFile {
 public:
  // Throws kIO "[<tag>] cannot open '<path>': ..." (or names what else the path is) unless
  // `path` is a regular file that can be mapped. An empty file maps to no bytes.
  static std::shared_ptr<const MappedFile> open(const std::string& path, const char* tag);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(const char* data, size_t size, std::string path)
      : data_(data), size_(size), path_(std::move(path)) {}
  const char* data_;
  size_t size_;
  std::string path_;
};

}  // namespace inplace
