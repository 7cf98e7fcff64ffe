#include "core/checksum.h"

// Header-only: every xxHash function is static inline in this translation unit alone.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace inplace {

uint64_t checksum64(const void* data, size_t nbytes) {
  return static_cast<uint64_t>(XXH3_64bits(data, nbytes));
}

struct Checksum64::State {
  XXH3_state_t xxh;
};

Checksum64::Checksum64() : state_(std::make_unique<State>()) {
  XXH3_INITSTATE(&state_->xxh);
  XXH3_64bits_reset(&state_->xxh);
}

Checksum64::~Checksum64() = default;

void Checksum64::update(const void* data, size_t nbytes) {
  if (nbytes) XXH3_64bits_update(&state_->xxh, data, nbytes);
}

uint64_t Checksum64::digest() const {
  return static_cast<uint64_t>(XXH3_64bits_digest(&state_->xxh));
}

}  // namespace inplace
