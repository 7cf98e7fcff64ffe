// Pieces every indexing kernel shares: reading integer index tensors (their dtypes and bounds
// errors: ops/index_args.h), and a copy that moves whole rows with memcpy when it can (the KV-cache
// hot path).
#pragma once
#include <cstdint>
#include <cstring>

#include "core/strided_loop.h"
#include "core/tensor.h"
#include "ops/index_args.h"

namespace inplace::cpu {

// Calls f.template operator()<I>() with I the C++ type of an int64/int32 index tensor.
template <typename F>
decltype(auto) visit_index_dtype(DType t, F&& f) {
  if (t == DType::kInt32) return f.template operator()<int32_t>();
  return f.template operator()<int64_t>();
}

// An unsigned type of the given element size: moves elements without caring what they are.
template <size_t N>
struct Bits;
template <>
struct Bits<1> {
  using type = uint8_t;
};
template <>
struct Bits<2> {
  using type = uint16_t;
};
template <>
struct Bits<4> {
  using type = uint32_t;
};
template <>
struct Bits<8> {
  using type = uint64_t;
};

// Calls f.template operator()<U>() with U an unsigned type of `itemsize` bytes.
template <typename F>
decltype(auto) visit_itemsize(size_t itemsize, F&& f) {
  switch (itemsize) {
    case 1:
      return f.template operator()<uint8_t>();
    case 2:
      return f.template operator()<uint16_t>();
    case 4:
      return f.template operator()<uint32_t>();
    default:
      return f.template operator()<uint64_t>();
  }
}

// dst <- src (src broadcast to dst's shape, converted to dst's dtype). Same-dtype copies move
// each contiguous run with one memcpy; overlapping operands are staged like Tensor::copy_from.
void copy_region(const Tensor& dst, const Tensor& src);

// The elements of `t` that `self` may still read while it is written: a private copy when the
// two share memory, else `t` itself.
Tensor unaliased(const Tensor& t, const Tensor& self);

}  // namespace inplace::cpu
