// The state table of a program: every tensor that lives across calls, by the module's own
// dotted name (`layers.0.k_cache`), with its shape, dtype, initial value and owner. Ownership
// is recorded per entry and is independent of how a method enforces the alias
// (kv_cache_update or user): it says who holds the storage, not who writes it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace inplace {

enum class Ownership : uint8_t {
  kCaller,   // passed by the caller on every call of every method that uses it, updated in place
  kRuntime,  // allocated by each Session from the initial value; reset() restores it
};
const char* ownership_name(Ownership o);

struct StateEntry {
  std::string name;
  Shape shape;
  DType dtype = DType::kFloat32;
  // The value a session starts from. Always defined for runtime-owned state; defined for
  // caller-owned state that comes from a module buffer; undefined for a caller's mutated input.
  Tensor initial;
  Ownership ownership = Ownership::kRuntime;
};

// Runtime-owned state is allocated once per session: each entry is limited to this many bytes.
inline constexpr int64_t kMaxStateBytes = int64_t{1} << 36;  // 64 GiB

class StateTable {
 public:
  StateTable() = default;
  explicit StateTable(std::vector<StateEntry> entries);  // checks names, sizes, initial values

  const std::vector<StateEntry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  const StateEntry& operator[](size_t i) const { return entries_[i]; }
  int find(const std::string& name) const;  // -1 when absent
  // Throws kNotFound naming `name` and listing every entry.
  int index(const std::string& name, const std::string& where) const;
  std::string names() const;  // 'a', 'b' (or "(none)")

 private:
  std::vector<StateEntry> entries_;
};

}  // namespace inplace
