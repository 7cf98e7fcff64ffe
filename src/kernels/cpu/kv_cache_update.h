// The KV-cache update kernel: cache[i, :, pos(i, s), :] = update[i, :, s, :].
#pragma once
#include "core/tensor.h"

namespace inplace::cpu {

// Write positions: `start` (0-d, [1] or [b]: row i writes slot s at start[i] + s) or `index`
// ([S] shared by all rows, or [b, S]). Exactly one is defined. Validates every position
// against s_max before writing anything (kv_cache::positions, ops/kv_cache_args.h), then writes
// `update` into `out` (which starts as a copy of `cache`; when the engine aliases out to cache
// that copy is a no-op).
void kv_cache_update(const Tensor& cache, const Tensor& update, const Tensor& start,
                     const Tensor& index, const Tensor& out);

}  // namespace inplace::cpu
