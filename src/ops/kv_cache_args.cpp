#include "ops/kv_cache_args.h"

#include "core/error.h"

namespace inplace::kv_cache {

Tensor position_tensor(const Value& v) {
  if (v.is_none()) return Tensor();
  if (v.is_tensor()) return v.tensor;
  return Tensor::scalar(v.as_scalar("kv_cache_update"), DType::kInt64);
}

void check_shapes(const Tensor& cache, const Tensor& update, const Tensor& start,
                  const Tensor& index) {
  IP_CHECK(cache.dim() == 4, kShapeMismatch,
           "[kv_cache_update] cache must be [batch, heads, s_max, head_dim], got ",
           shape_str(cache.shape()));
  IP_CHECK(update.dim() == 4 && update.size(0) == cache.size(0) &&
               update.size(1) == cache.size(1) && update.size(3) == cache.size(3) &&
               update.size(2) <= cache.size(2),
           kShapeMismatch, "[kv_cache_update] update ", shape_str(update.shape()),
           " does not fit cache ", shape_str(cache.shape()));
  IP_CHECK(start.defined() != index.defined(), kInvalidArgument,
           "[kv_cache_update] exactly one of start and index must be given");
  const Tensor& pos = start.defined() ? start : index;
  IP_CHECK(is_integral(pos.dtype(), false), kDTypeMismatch,
           "[kv_cache_update] positions must be integers, got ", dtype_name(pos.dtype()));
  const int64_t b = cache.size(0), s = update.size(2);
  if (start.defined()) {
    IP_CHECK(start.numel() == 1 || (start.dim() == 1 && start.size(0) == b), kShapeMismatch,
             "[kv_cache_update] start ", shape_str(start.shape()), " must be a scalar or [", b,
             "] for cache ", shape_str(cache.shape()));
  } else {
    IP_CHECK((index.dim() == 1 && index.size(0) == s) ||
                 (index.dim() == 2 && index.size(0) == b && index.size(1) == s),
             kShapeMismatch, "[kv_cache_update] index ", shape_str(index.shape()), " must be [", s,
             "] or [", b, ",", s, "] for update ", shape_str(update.shape()));
  }
}

namespace {
int64_t int_at(const Tensor& t, int64_t flat) {
  return static_cast<int64_t>(t.at(flat));
}
}  // namespace

std::vector<int64_t> positions(const Tensor& cache, const Tensor& update, const Tensor& start,
                               const Tensor& index) {
  check_shapes(cache, update, start, index);
  const int64_t b = cache.size(0), s_max = cache.size(2);
  const int64_t s = update.size(2);
  std::vector<int64_t> pos(static_cast<size_t>(b * s));
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t k = 0; k < s; ++k) {
      int64_t p;
      if (start.defined()) {
        int64_t w = int_at(start, start.numel() == 1 ? 0 : i);
        if (w < 0) w += s_max;  // a negative start wraps once, as a Python slice bound does
        p = w + k;
        IP_CHECK(w >= 0 && p < s_max, kOutOfRange, "[kv_cache_update] write position ", w, " + ", k,
                 " = ", p, " (batch row ", i, ") is out of range for a cache of s_max ", s_max);
      } else {
        p = int_at(index, index.dim() == 1 ? k : i * s + k);
        IP_CHECK(p >= 0 && p < s_max, kOutOfRange, "[kv_cache_update] write position ", p,
                 " (batch row ", i, ", slot ", k, ") is out of range for a cache of s_max ", s_max);
      }
      pos[i * s + k] = p;
    }
  }
  return pos;
}

std::vector<int64_t> positions(const Args& a) {
  return positions(a[kCache].as_tensor("kv_cache_update"), a[kUpdate].as_tensor("kv_cache_update"),
                   position_tensor(a[kStart]), position_tensor(a[kIndex]));
}

}  // namespace inplace::kv_cache
