// The KV-cache update kernel: cache[i, :, pos(i, s), :] = update[i, :, s, :].
#pragma once
#include <vector>

#include "core/tensor.h"

namespace inplace::cpu {

// Write positions: `start` (0-d, [1] or [b]: row i writes slot s at start[i] + s) or `index`
// ([S] shared by all rows, or [b, S]). Exactly one is defined. Validates every position
// against s_max before writing anything, then writes `update` into `out` (which starts as a
// copy of `cache`; when the engine aliases out to cache that copy is a no-op).
void kv_cache_update(const Tensor& cache, const Tensor& update, const Tensor& start,
                     const Tensor& index, const Tensor& out);

// Every write position (row-major over [batch, slot]), validated against s_max: throws
// kOutOfRange naming the position. An engine runs this before its first kernel when the
// positions are inputs, so a bad position refuses the whole call before any cache is written.
std::vector<int64_t> kv_cache_positions(const Tensor& cache, const Tensor& update,
                                        const Tensor& start, const Tensor& index);

// Throws kShapeMismatch/kOutOfRange naming the op and both shapes unless the operands fit.
void check_kv_cache_shapes(const Tensor& cache, const Tensor& update, const Tensor& start,
                           const Tensor& index);

}  // namespace inplace::cpu
