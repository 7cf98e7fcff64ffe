// kv_cache_update's arguments as every backend reads them: (cache, update, start, index), the
// write positions either a start (a number or a 0-d / [1] / [b] tensor) or an index ([S] or
// [b, S]), the shape rule and the position check (which the engine also runs before a call's
// first kernel when the positions are inputs).
#pragma once
#include <vector>

#include "ops/registry.h"

namespace inplace::kv_cache {

// Argument positions.
enum Arg { kCache = 0, kUpdate = 1, kStart = 2, kIndex = 3 };

// start or index as a tensor: undefined for None, a number as a 0-d int64.
Tensor position_tensor(const Value& v);

// Throws kShapeMismatch/kOutOfRange naming the op and both shapes unless the operands fit.
void check_shapes(const Tensor& cache, const Tensor& update, const Tensor& start,
                  const Tensor& index);

// Every write position (row-major over [batch, slot]), validated against s_max: throws
// kOutOfRange naming the position. Read on the host: the cpu kernel resolves its writes with it,
// and an engine runs it before its first kernel when the positions are inputs, so a bad
// position refuses the whole call before any cache is written.
std::vector<int64_t> positions(const Tensor& cache, const Tensor& update, const Tensor& start,
                               const Tensor& index);
// The same from the op's arguments.
std::vector<int64_t> positions(const Args& a);

}  // namespace inplace::kv_cache
