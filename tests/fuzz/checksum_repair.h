// Shared by the file-loader fuzz targets: tries `bytes` as given, then with its trailing 8-byte
// checksum repaired, so mutations reach the field decoders rather than stopping at the checksum.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "engine/engine_file.h"

namespace inplace::fuzz {

template <class Attempt>
void try_as_given_and_repaired(const uint8_t* data, size_t size, Attempt attempt) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  attempt(bytes);
  if (bytes.size() >= 8) {
    uint64_t h = engine_file_checksum(std::string_view(bytes).substr(0, bytes.size() - 8));
    std::memcpy(bytes.data() + bytes.size() - 8, &h, 8);
    attempt(bytes);
  }
}

// `bytes` in a 64-byte aligned buffer that the result owns, as a loaded file's bytes are: loading
// with it as keep_alive makes the weights views of it (the path of a file loaded from a path).
inline std::shared_ptr<const char> aligned_copy(const std::string& bytes) {
  const size_t n = (bytes.size() + 63) / 64 * 64 + 64;
  char* p = static_cast<char*>(std::aligned_alloc(64, n));
  if (!bytes.empty()) std::memcpy(p, bytes.data(), bytes.size());
  return std::shared_ptr<const char>(p, [](const char* q) { std::free(const_cast<char*>(q)); });
}

}  // namespace inplace::fuzz
