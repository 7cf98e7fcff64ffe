#include "engine/plan.h"

namespace inplace {

const char* buffer_kind_name(BufferKind k) {
  switch (k) {
    case BufferKind::kInput: return "input";
    case BufferKind::kOutput: return "output";
    case BufferKind::kArena: return "arena";
    case BufferKind::kConstant: return "constant";
  }
  return "?";
}

const char* alias_kind_name(AliasKind k) {
  return k == AliasKind::kKvCacheUpdate ? "kv_cache_update" : "user";
}

bool parse_alias_kind(const std::string& s, AliasKind* out) {
  if (s == "kv_cache_update") *out = AliasKind::kKvCacheUpdate;
  else if (s == "user") *out = AliasKind::kUser;
  else return false;
  return true;
}

}  // namespace inplace
