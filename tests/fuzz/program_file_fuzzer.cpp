// libFuzzer target: deserialize_program on arbitrary bytes must return a program or throw
// inplace::Error — never crash, leak or trip a sanitizer. Each input is tried as given and with
// its trailing checksum repaired, so mutations reach the field decoders (the state table, the
// method list, each embedded engine file); loaded both copying its weights and viewing them in
// place (the path of a file loaded from its path).
#include "checksum_repair.h"
#include "program/program_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  inplace::fuzz::try_as_given_and_repaired(data, size, [](const std::string& b) {
    try {
      auto program = inplace::deserialize_program(b, "<fuzz>");
      (void)program->describe();
    } catch (const inplace::Error&) {
    }
    try {
      auto bytes = inplace::fuzz::aligned_copy(b);
      auto program = inplace::deserialize_program({bytes.get(), b.size()}, "<fuzz>", bytes);
      (void)program->describe();
    } catch (const inplace::Error&) {
    }
  });
  return 0;
}
