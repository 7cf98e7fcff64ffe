// libFuzzer target: deserialize_program on arbitrary bytes must return a program or throw
// inplace::Error — never crash, leak or trip a sanitizer. Each input is tried as given and with
// its trailing checksum repaired, so mutations reach the field decoders (the state table, the
// method list, each embedded engine file).
#include <cstdint>
#include <cstring>
#include <string>

#include "engine/engine_file.h"
#include "program/program_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto attempt = [](const std::string& b) {
    try {
      auto program = inplace::deserialize_program(b, "<fuzz>");
      (void)program->describe();
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
