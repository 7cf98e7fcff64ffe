// topk along one dim on the device (topk.cu): the k largest elements of each lane and their
// indices, in the cpu kernel's order (value descending, the smaller index first among equal
// values, NaN larger than every number, -0 equal to +0), for float32, bfloat16 and float16 lanes
// and 1 <= k <= kTopkMaxK. Each lane is split into chunks, one block of a thread-block cluster
// each: a block finds its chunk's k largest by a radix select over (value, index) keys, the
// cluster's first block selects the lane's k from theirs (distributed shared memory) and sorts
// them. One launch, no scratch; the result does not depend on timing.
#pragma once
#include <cstdint>

#include "kernels/cuda/launch.h"

namespace inplace::cuda {

inline constexpr int64_t kTopkMaxK = 1024;

struct Topk {
  // The lanes: lane r starts at offset_of(rows, r) of in.data (elements), element j of it
  // j * in_stride further. values (in's dtype) and indices (int64) likewise with k elements.
  Operand in, values, indices;  // only data, dtype and the rows' shape and strides are read
  int64_t lanes = 1, n = 0, k = 0;
  int64_t in_stride = 1, values_stride = 1, indices_stride = 1;
};
void topk(const Topk& t, void* stream);

}  // namespace inplace::cuda
