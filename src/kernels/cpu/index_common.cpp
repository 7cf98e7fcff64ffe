#include "kernels/cpu/index_common.h"

namespace inplace::cpu {

void copy_region(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) {
    broadcast_strides(src, dst.shape(), "copy_");  // still report a shape mismatch
    return;
  }
  if (src.dtype() != dst.dtype() || (src.may_overlap(dst) && !src.same_view(dst))) {
    dst.copy_from(src);
    return;
  }
  const Shape sst = broadcast_strides(src, dst.shape(), "copy_");
  const size_t item = dst.itemsize();
  char* d0 = static_cast<char*>(dst.data_ptr());
  const char* s0 = static_cast<const char*>(src.data_ptr());
  visit_itemsize(item, [&]<typename U>() {
    U* dp = reinterpret_cast<U*>(d0);
    const U* sp = reinterpret_cast<const U*>(s0);
    strided_loop<2>(dst.shape(), {dst.strides(), sst}, [&](auto off, int64_t n, auto st) {
      U* d = dp + off[0];
      const U* s = sp + off[1];
      if (st[0] == 1 && st[1] == 1) {
        std::memmove(d, s, static_cast<size_t>(n) * sizeof(U));
      } else {
        for (int64_t i = 0; i < n; ++i) d[i * st[0]] = s[i * st[1]];
      }
    });
  });
}

Tensor unaliased(const Tensor& t, const Tensor& self) {
  return t.defined() && t.may_overlap(self) ? t.clone() : t;
}

}  // namespace inplace::cpu
