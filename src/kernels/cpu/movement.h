// CPU kernels that move elements without arithmetic: cat, stack, repeat, roll, flip. Each
// writes a pre-allocated contiguous result; inputs may be strided and of other dtypes (the
// element conversion is copy_'s). Arguments were validated by the op's shape inference.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace inplace::cpu {

// Concatenates along `dim` (already wrapped). Legacy empty 1-D tensors ([0]) are skipped.
void cat(const std::vector<Tensor>& inputs, int64_t dim, const Tensor& out);
// Stacks equal-shaped inputs along a new dim `dim` (already wrapped against out's rank).
void stack(const std::vector<Tensor>& inputs, int64_t dim, const Tensor& out);
// Tiles self `repeats[i]` times along dim i (self's shape padded with leading 1s).
void repeat(const Tensor& self, const std::vector<int64_t>& repeats, const Tensor& out);
// out[(i + shift) mod n] = self[i] along each dim in `dims` (wrapped, may repeat).
void roll(const Tensor& self, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims,
          const Tensor& out);
// Reverses self along each dim in `dims` (wrapped, distinct).
void flip(const Tensor& self, const std::vector<int64_t>& dims, const Tensor& out);

}  // namespace inplace::cpu
