// libFuzzer target: deserialize_engine on arbitrary bytes must return an engine or throw
// inplace::Error — never crash, leak or trip a sanitizer. Each input is tried as given and with
// its trailing checksum repaired, so mutations reach the field decoders rather than stopping at
// the checksum, and loaded both copying its weights and viewing them in place (the path of
// a file loaded from its path). Build and run: scripts/fuzz.sh.
#include "checksum_repair.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  inplace::fuzz::try_as_given_and_repaired(data, size, [](const std::string& b) {
    try {
      auto engine = inplace::deserialize_engine(b, "<fuzz>");
      (void)engine->describe();
    } catch (const inplace::Error&) {
    }
    try {
      auto bytes = inplace::fuzz::aligned_copy(b);
      auto engine = inplace::deserialize_engine({bytes.get(), b.size()}, "<fuzz>", nullptr, bytes);
      (void)engine->describe();
    } catch (const inplace::Error&) {
    }
  });
  return 0;
}
