#include "ops/index_args.h"

#include "core/error.h"

namespace inplace {

void check_index_dtype(const Tensor& t, const char* op, const char* what) {
  IP_CHECK(is_index_dtype(t.dtype()), kDTypeMismatch, "[", op, "] ", what,
           " tensors must be int64 or int32, got ", dtype_name(t.dtype()));
}

void throw_index_out_of_bounds(const char* op, int64_t index, int64_t dim, int64_t size) {
  IP_FAIL(kOutOfRange, "[", op, "] index ", index, " is out of bounds for dimension ", dim,
          " with size ", size);
}

}  // namespace inplace
