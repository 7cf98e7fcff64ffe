// The one n-d iteration every CPU kernel uses: shape plus N operands' element strides,
// coalesced, with a contiguous-friendly inner loop. Broadcast operands have stride 0.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace inplace {

// Calls inner(offsets, n, inner_strides): `n` elements starting at element offsets
// `offsets[k]` and stepping `inner_strides[k]` for operand k.
template <size_t N, typename F>
void strided_loop(const Shape& shape, const std::array<Shape, N>& strides, F&& inner) {
  // Drop size-1 dims and coalesce dims that are contiguous for every operand.
  std::vector<int64_t> sz;
  std::array<std::vector<int64_t>, N> st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return;
    if (shape[d] == 1) continue;
    if (!sz.empty()) {
      bool merge = true;
      for (size_t k = 0; k < N; ++k)
        if (st[k].back() != strides[k][d] * shape[d]) merge = false;
      if (merge) {
        sz.back() *= shape[d];
        for (size_t k = 0; k < N; ++k) st[k].back() = strides[k][d];
        continue;
      }
    }
    sz.push_back(shape[d]);
    for (size_t k = 0; k < N; ++k) st[k].push_back(strides[k][d]);
  }
  std::array<int64_t, N> off{};
  std::array<int64_t, N> inner_st{};
  if (sz.empty()) {
    inner(off, 1, inner_st);
    return;
  }
  const size_t nd = sz.size();
  for (size_t k = 0; k < N; ++k) inner_st[k] = st[k][nd - 1];
  const int64_t n = sz[nd - 1];
  std::vector<int64_t> idx(nd, 0);
  while (true) {
    inner(off, n, inner_st);
    // odometer over the outer dims
    int64_t d = static_cast<int64_t>(nd) - 2;
    for (; d >= 0; --d) {
      if (++idx[d] < sz[d]) {
        for (size_t k = 0; k < N; ++k) off[k] += st[k][d];
        break;
      }
      for (size_t k = 0; k < N; ++k) off[k] -= st[k][d] * (sz[d] - 1);
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// Strides of `t` broadcast to `shape` (0 on broadcast dims); t must be broadcastable.
Shape broadcast_strides(const Tensor& t, const Shape& shape, const char* op);

}  // namespace inplace
