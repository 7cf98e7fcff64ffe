// A regular file's bytes, read once into private read-only memory (an anonymous mapping,
// page-aligned, PROT_READ after the read), freed when the last reference goes. Loading an engine
// or program file reads it here and lets the weights point into these bytes. They are the
// process's own: truncating the file, rewriting it in place or copying another file over it
// (`cp new.inplace old.inplace`) afterwards changes nothing a loaded engine sees and cannot fault
// it. A file mapped in place (MAP_SHARED or MAP_PRIVATE) would: truncation SIGBUSes the reader,
// and MAP_PRIVATE pages not yet touched see later writes. The price is one copy from the page
// cache at load and anonymous (not file-backed, not shared) memory for the weights:
// docs/engine-format.md, "Loading into private memory".
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace inplace {

class MappedFile {
 public:
  // Throws kIO "[<tag>] cannot open '<path>': ..." (or names what else the path is) unless
  // `path` is a regular file that can be read whole; kIO "[<tag>] '<path>' changed while being
  // read ..." when it shrinks during the read. An empty file gives no bytes.
  static std::shared_ptr<const MappedFile> open(const std::string& path, const char* tag);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(const char* data, size_t size, size_t mapped, std::string path)
      : data_(data), size_(size), mapped_(mapped), path_(std::move(path)) {}
  const char* data_;
  size_t size_;
  size_t mapped_;  // bytes of the anonymous mapping (size_ rounded up to a page)
  std::string path_;
};

}  // namespace inplace
