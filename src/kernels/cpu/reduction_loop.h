// The iteration every reduction kernel shares: one call per output element, and inside it the
// reduced elements in row-major order, as strided runs. No allocation per output element.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>

#include "core/strided_loop.h"
#include "kernels/cpu/reduction.h"

namespace inplace::cpu {

inline constexpr int kMaxReduceDims = 64;

struct ReduceLoop {
  // Kept dims (input order): sizes and the element strides of input and output.
  Shape kept_sizes, kept_in_strides, kept_out_strides;
  // Reduced dims, coalesced but never reordered, so a running count is the row-major position.
  Shape red_sizes, red_strides;
  int64_t red_numel = 1;
};

ReduceLoop make_reduce_loop(const Tensor& in, const DimMask& reduced, const Tensor& out);

// f(in_offset, out_offset) once per output element.
template <typename F>
void for_each_output(const ReduceLoop& p, F&& f) {
  strided_loop<2>(
      p.kept_sizes, {p.kept_in_strides, p.kept_out_strides},
      [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
        for (int64_t i = 0; i < n; ++i) f(off[0] + i * st[0], off[1] + i * st[1]);
      });
}

// Whether the innermost kept dim is the unit-stride one (reducing the outer dims of a row-major
// tensor): then a block of adjacent outputs is best accumulated together, row by row.
inline bool is_outer_reduction(const ReduceLoop& p) {
  if (p.kept_sizes.empty() || p.kept_in_strides.back() != 1 || p.kept_sizes.back() < 2)
    return false;
  for (int64_t s : p.red_strides)
    if (s == 1 || s == 0) return false;
  return !p.red_sizes.empty();
}

inline constexpr int64_t kOutputBlock = 64;

// f(in_offset, out_offset, width, out_stride) for blocks of up to kOutputBlock outputs adjacent
// along the innermost kept dim (unit input stride); only when is_outer_reduction(p).
template <typename F>
void for_each_output_block(const ReduceLoop& p, F&& f) {
  const size_t nk = p.kept_sizes.size();
  const Shape outer(p.kept_sizes.begin(), p.kept_sizes.begin() + nk - 1);
  const Shape outer_in(p.kept_in_strides.begin(), p.kept_in_strides.begin() + nk - 1);
  const Shape outer_out(p.kept_out_strides.begin(), p.kept_out_strides.begin() + nk - 1);
  const int64_t inner = p.kept_sizes.back(), os = p.kept_out_strides.back();
  strided_loop<2>(
      outer, {outer_in, outer_out},
      [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
        for (int64_t k = 0; k < n; ++k)
          for (int64_t j0 = 0; j0 < inner; j0 += kOutputBlock)
            f(off[0] + k * st[0] + j0, off[1] + k * st[1] + j0 * os,
              std::min(kOutputBlock, inner - j0), os);
      });
}

// f(offset, n, stride, position) for each run of the innermost reduced dim, starting at input
// element `base`; `position` is the row-major index of the run's first element.
template <typename F>
void for_each_run(const ReduceLoop& p, int64_t base, F&& f) {
  const int64_t nd = static_cast<int64_t>(p.red_sizes.size());
  if (p.red_numel == 0) return;
  if (nd == 0) {
    f(base, int64_t{1}, int64_t{0}, int64_t{0});
    return;
  }
  const int64_t n = p.red_sizes[nd - 1], s = p.red_strides[nd - 1];
  if (nd == 1) {
    f(base, n, s, int64_t{0});
    return;
  }
  std::array<int64_t, kMaxReduceDims> idx{};
  int64_t off = base, pos = 0;
  while (true) {
    f(off, n, s, pos);
    pos += n;
    int64_t d = nd - 2;
    for (; d >= 0; --d) {
      if (++idx[d] < p.red_sizes[d]) {
        off += p.red_strides[d];
        break;
      }
      off -= p.red_strides[d] * (p.red_sizes[d] - 1);
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

}  // namespace inplace::cpu
