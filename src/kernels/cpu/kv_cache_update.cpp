// The cpu kernel of kv_cache_update, registered into the kernel table; its arguments and write
// positions are decoded as every backend reads them (ops/kv_cache_args.h).
#include "kernels/cpu/kv_cache_update.h"

#include <cstring>
#include <vector>

#include "kernels/cpu/registration.h"
#include "ops/kv_cache_args.h"

namespace inplace::cpu {

void kv_cache_update(const Tensor& cache, const Tensor& update, const Tensor& start,
                     const Tensor& index, const Tensor& out) {
  const int64_t b = cache.size(0), h = cache.size(1), s_max = cache.size(2), d = cache.size(3);
  const int64_t s = update.size(2);
  // Every position is resolved and validated before the first write: a bad position leaves
  // the cache exactly as it was.
  const std::vector<int64_t> pos = kv_cache::positions(cache, update, start, index);
  out.copy_from(cache);
  const size_t row_bytes = static_cast<size_t>(d) * out.itemsize();
  const bool fast = out.is_contiguous() && update.stride(3) == 1 && update.dtype() == out.dtype();
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t hh = 0; hh < h; ++hh) {
      for (int64_t k = 0; k < s; ++k) {
        int64_t p = pos[i * s + k];
        if (fast) {
          char* dst = static_cast<char*>(out.data_ptr()) +
                      ((i * h + hh) * s_max + p) * static_cast<int64_t>(row_bytes);
          const char* src = static_cast<const char*>(update.data_ptr()) +
                            (i * update.stride(0) + hh * update.stride(1) + k * update.stride(2)) *
                                static_cast<int64_t>(update.itemsize());
          std::memcpy(dst, src, row_bytes);
        } else {
          out.select(0, i).select(0, hh).select(0, p).copy_from(
              update.select(0, i).select(0, hh).select(0, k));
        }
      }
    }
  }
}

void register_kv_cache_kernels(KernelTable& table) {
  using namespace kv_cache;
  table.add(DeviceType::kCpu, "kv_cache_update",
            [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
              kv_cache_update(a[kCache].as_tensor("kv_cache_update"),
                              a[kUpdate].as_tensor("kv_cache_update"), position_tensor(a[kStart]),
                              position_tensor(a[kIndex]), out[0]);
            });
}

}  // namespace inplace::cpu
