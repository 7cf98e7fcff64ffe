// libFuzzer target: read_safetensors_bytes on arbitrary bytes must return tensors or throw
// inplace::Error (bad header length, JSON, dtype, shape, offsets, overlap) — never read out of
// bounds. Tensors that load must write back and reload bit-identically. Run: scripts/fuzz.sh
// safetensors.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "frontend/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  std::map<std::string, inplace::Tensor> tensors;
  std::map<std::string, std::string> metadata;
  try {
    tensors = inplace::read_safetensors_bytes(bytes, "<fuzz>", &metadata);
  } catch (const inplace::Error&) {
    return 0;
  }
  std::string written = inplace::write_safetensors_bytes(tensors, metadata);
  auto again = inplace::read_safetensors_bytes(written, "<fuzz:rewritten>");
  if (again.size() != tensors.size()) std::abort();
  for (const auto& [key, t] : tensors) {
    const auto& u = again.at(key);
    if (u.dtype() != t.dtype() || u.shape() != t.shape() || u.nbytes() != t.nbytes()) std::abort();
    if (t.nbytes() && std::memcmp(u.data_ptr(), t.data_ptr(), t.nbytes()) != 0) std::abort();
  }
  return 0;
}
