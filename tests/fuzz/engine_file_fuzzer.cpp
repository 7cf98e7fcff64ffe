// libFuzzer target: deserialize_engine on arbitrary bytes must return an engine or throw
// inplace::Error — never crash, leak or trip a sanitizer. Each input is tried as given and with
// its trailing checksum repaired, so mutations reach the field decoders rather than stopping at
// the checksum. Build and run: scripts/fuzz.sh.
#include <cstdint>
#include <cstring>
#include <string>

#include "engine/engine_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto attempt = [](const std::string& b) {
    try {
      auto engine = inplace::deserialize_engine(b, "<fuzz>");
      (void)engine->describe();
    } catch (const inplace::Error&) {
    }
  };
  attempt(bytes);
  if (bytes.size() >= 8) {
    uint64_t h = inplace::engine_file_checksum(std::string_view(bytes).substr(0, bytes.size() - 8));
    std::memcpy(bytes.data() + bytes.size() - 8, &h, 8);
    attempt(bytes);
  }
  return 0;
}
