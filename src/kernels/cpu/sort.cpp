// One lane at a time: its (value, index) pairs are copied into a scratch buffer and ordered by
// a strict total order (value, NaN largest, then index), so std::sort gives what a stable sort
// would and a partial selection for topk agrees with it.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "core/strided_loop.h"
#include "kernels/cpu/sort.h"

namespace inplace::cpu {

namespace {

template <typename C>
inline bool key_less(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(b)) return !std::isnan(a);
  }
  return a < b;
}

template <typename T>
void sort_typed(const Tensor& in, int64_t dim, int64_t k, bool descending, const Tensor& values,
                const Tensor& indices) {
  using C = std::conditional_t<std::is_same_v<T, bool>, bool, opmath_t<T>>;
  using Item = std::pair<C, int64_t>;
  const int64_t len = in.size(dim), is = in.stride(dim);
  const bool want_values = values.defined(), want_indices = indices.defined();
  const int64_t vs = want_values ? values.stride(dim) : 0;
  const int64_t xs = want_indices ? indices.stride(dim) : 0;
  const T* ip = in.data<T>();
  T* vp = want_values ? values.data<T>() : nullptr;
  int64_t* xp = want_indices ? indices.data<int64_t>() : nullptr;
  auto before = [descending](const Item& x, const Item& y) {
    if (descending) {
      if (key_less(y.first, x.first)) return true;
      if (key_less(x.first, y.first)) return false;
    } else {
      if (key_less(x.first, y.first)) return true;
      if (key_less(y.first, x.first)) return false;
    }
    return x.second < y.second;
  };
  std::vector<Item> buf(static_cast<size_t>(len));
  Shape lanes = in.shape();
  lanes[dim] = 1;
  // Results have k along dim; their lane strides are the ones that matter (dim has size 1).
  const Shape no_stride(lanes.size(), 0);
  const Shape& v_st = want_values ? values.strides() : no_stride;
  const Shape& x_st = want_indices ? indices.strides() : no_stride;
  strided_loop<3>(
      lanes, {in.strides(), v_st, x_st},
      [&](const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& st) {
        for (int64_t j = 0; j < n; ++j) {
          const T* x = ip + off[0] + j * st[0];
          for (int64_t i = 0; i < len; ++i) buf[i] = {static_cast<C>(x[i * is]), i};
          if (k == len) {
            std::sort(buf.begin(), buf.end(), before);
          } else if (k > 0) {
            std::nth_element(buf.begin(), buf.begin() + (k - 1), buf.end(), before);
            std::sort(buf.begin(), buf.begin() + (k - 1), before);
          }
          if (want_values) {
            T* v = vp + off[1] + j * st[1];
            for (int64_t i = 0; i < k; ++i) v[i * vs] = static_cast<T>(buf[i].first);
          }
          if (want_indices) {
            int64_t* ix = xp + off[2] + j * st[2];
            for (int64_t i = 0; i < k; ++i) ix[i * xs] = buf[i].second;
          }
        }
      });
}

}  // namespace

void sort_lanes(const Tensor& in, int64_t dim, int64_t k, bool descending, const Tensor& values,
                const Tensor& indices) {
  IP_ASSERT(dim >= 0 && dim < in.dim(), "sort dim is wrapped");
  IP_ASSERT(k >= 0 && k <= in.size(dim), "sort keeps at most the lane's elements");
  IP_ASSERT(!values.defined() || values.dtype() == in.dtype(), "sort values keep the dtype");
  IP_ASSERT(!indices.defined() || indices.dtype() == DType::kInt64, "sort indices are int64");
  if (in.numel() == 0 || k == 0) return;
  visit_dtype(in.dtype(),
              [&]<typename T>() { sort_typed<T>(in, dim, k, descending, values, indices); });
}

}  // namespace inplace::cpu
