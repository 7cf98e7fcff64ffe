// The relation "output j is the new value of input i", one record from alias analysis through
// the pass pipeline, the engine and the engine file (after AOTAutograd's InputAliasInfo and
// MutationType). Inputs are numbered placeholders first, in graph order, then every mutated
// buffer (see docs/passes.md, "Input numbering"); after buffer lifting input i is the i-th
// placeholder and the engine's i-th input binding.
#pragma once
#include <cstdint>
#include <string>

namespace inplace {

// How the new value reaches the input's memory.
enum class MutationKind : uint8_t {
  kKvCacheUpdate,  // a kv_cache_update step writes only the new rows, in place
  kUser,           // the program's write, or one its caller declared: the whole value
};
const char* mutation_kind_name(MutationKind k);  // "user", "kv_cache_update"
bool parse_mutation_kind(const std::string& s, MutationKind* out);

struct Mutation {
  int output = 0;  // flat output index that holds the new value
  int input = 0;   // input index (above)
  MutationKind kind = MutationKind::kUser;
  bool operator==(const Mutation&) const = default;
};

// A mutation named before the inputs are numbered: `--mutated-input INPUT=OUTPUT`, or a
// torch.export signature's buffer_mutation / user_input_mutation output. alias_analysis
// resolves it into a Mutation.
struct DeclaredMutation {
  std::string input;  // placeholder name, buffer (constant) target, or "input.<i>" (compile)
  int output = 0;     // flat output index
  bool operator==(const DeclaredMutation&) const = default;
};

}  // namespace inplace
