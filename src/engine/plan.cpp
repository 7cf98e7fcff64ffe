#include "backend/plan.h"

namespace inplace {

const char* buffer_kind_name(BufferKind k) {
  switch (k) {
    case BufferKind::kInput:
      return "input";
    case BufferKind::kOutput:
      return "output";
    case BufferKind::kArena:
      return "arena";
    case BufferKind::kConstant:
      return "constant";
  }
  return "?";
}

}  // namespace inplace
