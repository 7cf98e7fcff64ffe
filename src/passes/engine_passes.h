// Passes that follow functionalization when a program is compiled into an engine.
#pragma once
#include <vector>

#include "passes/functional_runner.h"

namespace inplace {

// lift_mutated_buffers: each mutated buffer (input index >= num_placeholders) becomes a
// placeholder after the existing ones, so input index i is the i-th placeholder.
void lift_mutated_buffers(FunctionalProgram& program);

// kv_cache_update: rewrites the write that produces a mutated 4-D input's new value —
// slice_scatter (step 1) / index_copy / index_put along dim 2 — into kv_cache_update.
// `examples` (one per placeholder after lifting) give shapes. Returns the number rewritten.
int match_kv_cache_updates(FunctionalProgram& program, const std::vector<Tensor>& examples);

}  // namespace inplace
