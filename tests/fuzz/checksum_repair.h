// Shared by the file-loader fuzz targets: tries `bytes` as given, then with its trailing 8-byte
// checksum repaired, so mutations reach the field decoders rather than stopping at the checksum.
#pragma once
#include <cstdint>
#include <cstring>
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

}  // namespace inplace::fuzz
