#include "ir/mutation.h"

namespace inplace {

const char* mutation_kind_name(MutationKind k) {
  return k == MutationKind::kKvCacheUpdate ? "kv_cache_update" : "user";
}

bool parse_mutation_kind(const std::string& s, MutationKind* out) {
  if (s == "kv_cache_update") {
    *out = MutationKind::kKvCacheUpdate;
  } else if (s == "user") {
    *out = MutationKind::kUser;
  } else {
    return false;
  }
  return true;
}

}  // namespace inplace
