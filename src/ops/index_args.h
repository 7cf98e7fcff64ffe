// What every indexing op and kernel reads the same way: which dtypes index and which mask,
// positions wrapped or refused in one wording, tensor and index-list arguments.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "core/tensor.h"
#include "core/value.h"

namespace inplace {

// Integer dtypes accepted as index tensors (masks are bool/uint8 and handled apart).
inline bool is_index_dtype(DType t) {
  return t == DType::kInt64 || t == DType::kInt32;
}
// bool or uint8 (torch still treats uint8 index tensors as masks).
inline bool is_mask_dtype(DType t) {
  return t == DType::kBool || t == DType::kUInt8;
}

// Checks that `t` is an int64/int32 index tensor; `op` names the caller.
void check_index_dtype(const Tensor& t, const char* op, const char* what = "index");

// Wraps a possibly negative index into [0, size) or throws
// "[op] index 5 is out of bounds for dimension 0 with size 3".
[[noreturn]] void throw_index_out_of_bounds(const char* op, int64_t index, int64_t dim,
                                            int64_t size);
inline int64_t wrap_index(int64_t v, int64_t size, int64_t dim, const char* op) {
  if (v < -size || v >= size) throw_index_out_of_bounds(op, v, dim, size);
  return v < 0 ? v + size : v;
}

namespace indexing {

// A "Tensor" argument; a Python number becomes a 0-dim tensor of `number_dtype` (or of the
// number's own default dtype when none is given).
Tensor tensor_arg(const Value& v, const char* op, std::optional<DType> number_dtype = {});
// aten's Tensor?[]: None -> undefined, ints and lists -> int64 tensors.
std::vector<Tensor> index_list(const Value& v, const char* op);

}  // namespace indexing

}  // namespace inplace
