// kv_cache_update: the graph op the kv_cache_update pass rewrites cache writes into. It is
// functional (its result is the updated cache); the engine places that result in the cache's
// own binding, so a decode step writes only the new rows.
#include "ops/kv_cache_args.h"
#include "ops/registry.h"

namespace inplace {

void register_kv_cache_ops(Registry& r) {
  r.add_out(
      "kv_cache_update(Tensor cache, Tensor update, Tensor? start=None, Tensor? index=None) -> "
      "Tensor",
      [](const Args& a) {
        const Tensor& cache = a[kv_cache::kCache].as_tensor("kv_cache_update");
        kv_cache::check_shapes(cache, a[kv_cache::kUpdate].as_tensor("kv_cache_update"),
                               kv_cache::position_tensor(a[kv_cache::kStart]),
                               kv_cache::position_tensor(a[kv_cache::kIndex]));
        return std::vector<Tensor>{Tensor::meta(cache.shape(), cache.dtype())};
      },
      nullptr);
  r.tag({"kv_cache_update"}, kScatterLike | kCacheUpdate);
}

}  // namespace inplace
