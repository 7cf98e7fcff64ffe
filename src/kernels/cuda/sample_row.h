// sample_row on the device (sample_row.cu): the draw of one token from a row of float32,
// bfloat16 or float16 logits by ops/sampling_weight.h's integer weights, exactly the host's
// (the cpu kernel's) draw. One launch of one thread-block cluster: each block takes a chunk, the
// blocks share the row's largest logit, first NaN and total weight through distributed shared
// memory, and the block holding the draw's place finds the token. No scratch memory.
#pragma once
#include <cstdint>

#include "kernels/cuda/launch.h"

namespace inplace::cuda {

struct SampleRow {
  const void* logits = nullptr;
  DType dtype = DType::kFloat32;
  int64_t n = 0, stride = 1;
  double temperature = 1;
  uint64_t draw = 0;
  int64_t* out = nullptr;  // [token, total, first NaN]
};
void sample_row(const SampleRow& s, void* stream);

}  // namespace inplace::cuda
