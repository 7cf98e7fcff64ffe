// The checksum engine and program files end with: XXH3-64 (seed 0) from xxHash, at memory
// speed (tens of GB/s), so checking a file costs far less than reading it from disk.
// xxHash is used header-only (XXH_INLINE_ALL, in checksum.cpp): building needs xxhash.h
// (Debian's libxxhash-dev), linking and running need nothing.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace inplace {

uint64_t checksum64(const void* data, size_t nbytes);
inline uint64_t checksum64(std::string_view bytes) {
  return checksum64(bytes.data(), bytes.size());
}

// The same checksum over bytes that arrive in pieces (a file written as it is produced):
// update() with each piece, in order; digest() equals checksum64 of their concatenation.
class Checksum64 {
 public:
  Checksum64();
  ~Checksum64();
  Checksum64(const Checksum64&) = delete;
  Checksum64& operator=(const Checksum64&) = delete;
  void update(const void* data, size_t nbytes);
  uint64_t digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace inplace
