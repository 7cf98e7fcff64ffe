#include "kernels/cpu/movement.h"

#include <utility>

namespace inplace::cpu {

namespace {
bool is_legacy_empty(const Tensor& t) {
  return t.dim() == 1 && t.shape()[0] == 0;
}
}  // namespace

void cat(const std::vector<Tensor>& inputs, int64_t dim, const Tensor& out) {
  int64_t offset = 0;
  for (const Tensor& t : inputs) {
    if (is_legacy_empty(t)) continue;
    const int64_t n = t.shape()[dim];
    out.narrow(dim, offset, n).copy_from(t);
    offset += n;
  }
  IP_ASSERT(out.numel() == 0 || offset == out.shape()[dim], "cat fills its result exactly");
}

void stack(const std::vector<Tensor>& inputs, int64_t dim, const Tensor& out) {
  for (size_t i = 0; i < inputs.size(); ++i)
    out.select(dim, static_cast<int64_t>(i)).copy_from(inputs[i]);
}

void repeat(const Tensor& self, const std::vector<int64_t>& repeats, const Tensor& out) {
  // View out as [r0, s0, r1, s1, ...] and broadcast self, seen as [1, s0, 1, s1, ...], into it.
  const size_t k = repeats.size();
  const size_t lead = k - static_cast<size_t>(self.dim());
  Shape dst_shape, src_shape, src_strides;
  for (size_t i = 0; i < k; ++i) {
    int64_t s = i < lead ? 1 : self.shape()[i - lead];
    int64_t st = i < lead ? 0 : self.strides()[i - lead];
    dst_shape.insert(dst_shape.end(), {repeats[i], s});
    src_shape.insert(src_shape.end(), {1, s});
    src_strides.insert(src_strides.end(), {0, st});
  }
  if (out.numel() == 0) return;
  out.view(dst_shape).copy_from(self.as_strided(src_shape, src_strides, self.offset()));
}

void roll(const Tensor& self, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims,
          const Tensor& out) {
  if (out.numel() == 0) return;
  if (self.dim() == 0) return out.copy_from(self);
  // Sum the shifts per dim so that a dim named twice is rolled once by the total.
  std::vector<int64_t> total(static_cast<size_t>(self.dim()), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t n = self.shape()[dims[i]];
    total[dims[i]] = (total[dims[i]] + shifts[i] % n + n) % n;
  }
  // Each rolled dim splits every (source, destination) block pair in two.
  std::vector<std::pair<Tensor, Tensor>> blocks = {{self, out}};
  for (int64_t d = 0; d < self.dim(); ++d) {
    const int64_t n = self.shape()[d], s = total[d];
    if (s == 0) continue;
    std::vector<std::pair<Tensor, Tensor>> next;
    for (const auto& [src, dst] : blocks) {
      next.emplace_back(src.narrow(d, 0, n - s), dst.narrow(d, s, n - s));
      next.emplace_back(src.narrow(d, n - s, s), dst.narrow(d, 0, s));
    }
    blocks = std::move(next);
  }
  for (const auto& [src, dst] : blocks) dst.copy_from(src);
}

void flip(const Tensor& self, const std::vector<int64_t>& dims, const Tensor& out) {
  if (out.numel() == 0) return;
  // A reversed view of self: start at the last element of each flipped dim, step backwards.
  // It is only read by copy_, which walks any strides, and never escapes this function.
  Shape strides = self.strides();
  int64_t offset = self.offset();
  for (int64_t d : dims) {
    offset += (self.shape()[d] - 1) * strides[d];
    strides[d] = -strides[d];
  }
  out.copy_from(Tensor(self.storage(), offset, self.shape(), strides, self.dtype()));
}

}  // namespace inplace::cpu
