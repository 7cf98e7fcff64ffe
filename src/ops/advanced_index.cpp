#include "ops/advanced_index.h"

#include <string>
#include <type_traits>

#include "core/error.h"
#include "core/strided_loop.h"
#include "ops/index_args.h"

namespace inplace {

AdvancedIndex plan_advanced_index(const Shape& self_shape, const std::vector<Tensor>& indices,
                                  const char* op, const std::vector<int64_t>* dim_names) {
  const int64_t ndim = static_cast<int64_t>(self_shape.size());
  IP_CHECK(static_cast<int64_t>(indices.size()) <= ndim, kOutOfRange, "[", op,
           "] too many indices for tensor of dimension ", ndim, " (got ", indices.size(), ")");
  AdvancedIndex ai;
  std::string shapes;
  bool first = true;
  for (size_t d = 0; d < indices.size(); ++d) {
    const Tensor& t = indices[d];
    if (!t.defined()) continue;
    IP_CHECK(is_index_dtype(t.dtype()), kDTypeMismatch, "[", op,
             "] tensors used as indices must be long, int, byte or bool tensors, got ",
             dtype_name(t.dtype()));
    ai.dims.push_back(static_cast<int64_t>(d));
    ai.indices.push_back(t);
    ai.report_dims.push_back(dim_names ? (*dim_names)[d] : static_cast<int64_t>(d));
    shapes += (shapes.empty() ? "" : ", ") + shape_str(t.shape());
    if (first) {
      ai.index_shape = t.shape();
      first = false;
      continue;
    }
    const Shape& a = ai.index_shape;
    const Shape& b = t.shape();
    size_t n = std::max(a.size(), b.size());
    Shape out(n);
    for (size_t i = 0; i < n; ++i) {
      int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
      int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
      if (da != db && da != 1 && db != 1) {
        // name every index shape, as torch does
        std::string all;
        for (const Tensor& x : indices)
          if (x.defined()) all += (all.empty() ? "" : ", ") + shape_str(x.shape());
        IP_FAIL(kShapeMismatch, "[", op,
                "] shape mismatch: indexing tensors could not be broadcast together with shapes ",
                all);
      }
      out[i] = da == 1 ? db : da;
    }
    ai.index_shape = out;
  }
  for (size_t k = 1; k < ai.dims.size(); ++k)
    if (ai.dims[k] != ai.dims[k - 1] + 1) ai.front = true;
  // Result: index dims in place of the (adjacent) indexed dims, or leading when separated.
  if (ai.front) ai.result_shape = ai.index_shape;
  bool placed = false;
  for (int64_t d = 0; d < ndim; ++d) {
    bool indexed = d < static_cast<int64_t>(indices.size()) && indices[d].defined();
    if (!indexed) {
      ai.result_shape.push_back(self_shape[d]);
    } else if (!ai.front && !placed) {
      ai.result_shape.insert(ai.result_shape.end(), ai.index_shape.begin(), ai.index_shape.end());
      placed = true;
    }
  }
  return ai;
}

AdvancedIndex plan_dim_index(const Shape& self_shape, int64_t dim, const Tensor& index,
                             const char* op) {
  IP_CHECK(index.dim() <= 1, kInvalidArgument, "[", op,
           "] index should have at most one dimension, got shape ", shape_str(index.shape()));
  check_index_dtype(index, op);
  std::vector<Tensor> idx(static_cast<size_t>(dim) + 1);
  idx[dim] = index.dim() == 0 ? index.unsqueeze(0) : index;
  return plan_advanced_index(self_shape, idx, op);
}

std::vector<Tensor> expand_index_masks(const Shape& self_shape, const std::vector<Tensor>& indices,
                                       const char* op) {
  std::vector<Tensor> out;
  out.reserve(indices.size());
  for (const Tensor& t : indices) {
    if (!t.defined() || !is_mask_dtype(t.dtype())) {
      out.push_back(t);
      continue;
    }
    const size_t pos = out.size();
    IP_CHECK(t.dim() > 0, kUnsupported, "[", op,
             "] a 0-dim boolean index tensor is only supported by getitem/setitem");
    IP_CHECK(pos + static_cast<size_t>(t.dim()) <= self_shape.size(), kOutOfRange, "[", op,
             "] too many indices for tensor of dimension ", self_shape.size(), " (mask of shape ",
             shape_str(t.shape()), " at index ", pos, ")");
    for (int64_t j = 0; j < t.dim(); ++j)
      IP_CHECK(t.shape()[j] == self_shape[pos + j], kShapeMismatch, "[", op,
               "] the shape of the mask ", shape_str(t.shape()), " at index ", j,
               " does not match the shape of the indexed tensor ", shape_str(self_shape),
               " at index ", pos + j);
    IP_CHECK(!t.is_meta(), kUnsupported, "[", op,
             "] a boolean mask index gives a data-dependent shape: the mask's values are needed");
    Tensor nz = nonzero(t);
    for (int64_t j = 0; j < t.dim(); ++j) out.push_back(nz.select(1, j));
  }
  return out;
}

namespace {
// Calls f(element_offset) for every element of t in row-major order, with its coordinates.
template <typename F>
void for_each_coord(const Tensor& t, F&& f) {
  const int64_t nd = t.dim();
  if (t.numel() == 0) return;
  std::vector<int64_t> coord(static_cast<size_t>(nd), 0);
  int64_t off = 0;
  while (true) {
    f(off, coord);
    int64_t d = nd - 1;
    for (; d >= 0; --d) {
      if (++coord[d] < t.shape()[d]) {
        off += t.strides()[d];
        break;
      }
      off -= t.strides()[d] * (t.shape()[d] - 1);
      coord[d] = 0;
    }
    if (d < 0) return;
  }
}

template <typename T>
bool nonzero_value(T v) {
  if constexpr (std::is_same_v<T, bool>)
    return v;
  else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return static_cast<float>(v) != 0.0f;
  else
    return v != T(0);
}
}  // namespace

int64_t count_nonzero(const Tensor& t) {
  int64_t count = 0;
  if (t.numel() == 0) return 0;
  visit_dtype(t.dtype(), [&]<typename T>() {
    const T* p = t.data<T>();
    strided_loop<1>(t.shape(), {t.strides()}, [&](auto off, int64_t n, auto st) {
      for (int64_t i = 0; i < n; ++i) count += nonzero_value(p[off[0] + i * st[0]]);
    });
  });
  return count;
}

Tensor nonzero(const Tensor& t) {
  const int64_t count = count_nonzero(t);
  Tensor out = Tensor::empty({count, t.dim()}, DType::kInt64);
  if (count == 0) return out;
  int64_t* o = out.data<int64_t>();
  visit_dtype(t.dtype(), [&]<typename T>() {
    const T* p = t.data<T>();
    for_each_coord(t, [&](int64_t off, const std::vector<int64_t>& coord) {
      if (!nonzero_value(p[off])) return;
      for (int64_t c : coord) *o++ = c;
    });
  });
  return out;
}

}  // namespace inplace
