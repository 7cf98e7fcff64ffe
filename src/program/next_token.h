// The next token of generation from a step's logits [..., V] (the last row): on a device, by the
// device's own kernels so that only a few bytes reach the host: greedy by argmax, top-k
// sampling by topk's k candidates, sampling over every token by sample_row's draw (top_p 1) or
// its total weight with topk's 1024 largest (top_p < 1, the row read whole only when the
// nucleus holds more). Every path draws exactly as Sampler::next() on the row.
#pragma once
#include <cstdint>

#include "core/tensor.h"
#include "program/sampler.h"

namespace inplace {

int64_t next_token(Sampler& sampler, const Tensor& logits, int64_t vocab);

}  // namespace inplace
