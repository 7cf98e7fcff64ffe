// Argument decoding of the scans (cumsum, cumprod), read by their declarations and by every
// backend's kernels.
#pragma once
#include <algorithm>

#include "core/tensor.h"
#include "core/value.h"

namespace inplace::scan {

// torch's rule: an explicit dtype wins; integral and bool inputs accumulate as int64.
inline DType scan_dtype(const Tensor& x, const Value& dtype) {
  if (!dtype.is_none()) return dtype.as_dtype("dtype");
  return is_integral(x.dtype(), /*include_bool=*/true) ? DType::kInt64 : x.dtype();
}

// The wrapped dim: a 0-d tensor scans as one element, so dim may be 0 or -1.
inline int64_t scan_dim(const Tensor& x, const Value& dim, const char* op) {
  return wrap_dim(dim.as_int("dim"), std::max<int64_t>(x.dim(), 1), op);
}

}  // namespace inplace::scan
