#include "kernels/cpu/creation.h"

#include <algorithm>

namespace inplace::cpu {

void arange(const Tensor& out, Scalar start, Scalar step) {
  IP_ASSERT(out.is_contiguous(), "arange writes a contiguous result");
  const int64_t n = out.numel();
  if (n == 0) return;
  visit_dtype(out.dtype(), [&]<typename T>() {
    T* p = out.data<T>();
    if constexpr (kIsFloat<T>) {
      const double s = start.to_double(), st = step.to_double();
      for (int64_t i = 0; i < n; ++i) p[i] = convert<T>(s + static_cast<double>(i) * st);
    } else {
      const int64_t s = start.to_int(), st = step.to_int();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(s + i * st);
    }
  });
}

void tril_triu(const Tensor& self, int64_t diagonal, bool upper, const Tensor& out) {
  IP_ASSERT(out.is_contiguous() && out.dim() >= 2, "tril/triu writes a contiguous matrix batch");
  out.copy_from(self);
  const int64_t rows = out.shape()[out.dim() - 2], cols = out.shape()[out.dim() - 1];
  if (out.numel() == 0) return;
  const int64_t batch = out.numel() / (rows * cols);
  // Past rows + cols every element is kept or every one zeroed; clamping avoids overflow.
  const int64_t k = std::clamp<int64_t>(diagonal, -rows - cols, rows + cols);
  visit_dtype(out.dtype(), [&]<typename T>() {
    T* base = out.data<T>();
    const T zero = convert<T>(0);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < rows; ++i) {
        T* row = base + (b * rows + i) * cols;
        // tril keeps j <= i + k; triu keeps j >= i + k.
        int64_t lo = upper ? 0 : std::clamp<int64_t>(i + k + 1, 0, cols);
        int64_t hi = upper ? std::clamp<int64_t>(i + k, 0, cols) : cols;
        std::fill(row + lo, row + hi, zero);
      }
    }
  });
}

}  // namespace inplace::cpu
