// Argument checks of the batched products with an added term (baddbmm, addbmm), read by their
// declarations (shape/dtype rules) and by the kernels, which check a call as its declaration does.
#pragma once
#include <cstdint>

#include "core/tensor.h"
#include "core/value.h"
#include "ops/registry.h"  // Args

namespace inplace::matrix {

struct BatchProduct {
  int64_t batch, rows, cols;
};
// Checks self, batch1, batch2 and beta/alpha as torch does; `summed` for addbmm.
BatchProduct check_batch_product(const Args& a, const char* op, bool summed);

}  // namespace inplace::matrix
