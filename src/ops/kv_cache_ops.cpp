// kv_cache_update: the graph op the kv_cache_update pass rewrites cache writes into. It is
// functional (its result is the updated cache); the engine places that result in the cache's
// own binding, so a decode step writes only the new rows.
#include "kernels/cpu/kv_cache_update.h"
#include "ops/registry.h"

namespace inplace {

namespace {
Tensor optional_tensor(const Value& v) {
  if (v.is_none()) return Tensor();
  if (v.is_tensor()) return v.tensor;
  return Tensor::scalar(v.as_scalar("kv_cache_update"), DType::kInt64);
}
}  // namespace

void register_kv_cache_ops(Registry& r) {
  r.add_out(
      "kv_cache_update(Tensor cache, Tensor update, Tensor? start=None, Tensor? index=None) -> "
      "Tensor",
      [](const Args& a) {
        const Tensor& cache = a[0].as_tensor("kv_cache_update");
        cpu::check_kv_cache_shapes(cache, a[1].as_tensor("kv_cache_update"), optional_tensor(a[2]),
                                   optional_tensor(a[3]));
        return std::vector<Tensor>{Tensor::meta(cache.shape(), cache.dtype())};
      },
      [](const Args& a, const std::vector<Tensor>& out) {
        cpu::kv_cache_update(a[0].as_tensor("kv_cache_update"), a[1].as_tensor("kv_cache_update"),
                             optional_tensor(a[2]), optional_tensor(a[3]), out[0]);
      });
  r.tag({"kv_cache_update"}, kScatterLike | kCacheUpdate);
}

}  // namespace inplace
