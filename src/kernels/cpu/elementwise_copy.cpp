// Copy with broadcasting and dtype conversion (the kernel behind copy_, to, clone, casts), and
// fill. Same-dtype copies move bytes by element size, so ten dtypes share four loops.
#include <cstring>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/elementwise_loop.h"

namespace inplace::cpu {

namespace {

template <typename U>
void copy_bits(const Tensor& out, const Tensor& src) {
  if (out.is_contiguous() && detail::flat_with(out, src)) {
    std::memmove(out.data_ptr(), src.data_ptr(), out.nbytes());
    return;
  }
  // Both sides read as same-size unsigned words: the loop only moves them.
  detail::unary_map<U, U>(out, src, [](U v) { return v; });
}

}  // namespace

void copy_cast(const Tensor& out, const Tensor& src) {
  if (out.numel() == 0) return;
  if (src.may_overlap(out) && !src.same_view(out)) {
    copy_cast(out, src.clone());  // stage a partially overlapping source first
    return;
  }
  if (src.dtype() == out.dtype()) {
    if (src.same_view(out)) return;
    switch (out.itemsize()) {
      case 1:
        return copy_bits<uint8_t>(out, src);
      case 2:
        return copy_bits<uint16_t>(out, src);
      case 4:
        return copy_bits<uint32_t>(out, src);
      default:
        return copy_bits<uint64_t>(out, src);
    }
  }
  visit_dtype(out.dtype(), [&]<typename D>() {
    visit_dtype(src.dtype(), [&]<typename S>() {
      detail::unary_map<S, D>(out, src, [](S v) { return convert<D>(v); });
    });
  });
}

void fill(const Tensor& out, Scalar value) {
  visit_dtype(out.dtype(), [&]<typename T>() { detail::fill_value<T>(out, value.to<T>()); });
}

}  // namespace inplace::cpu
