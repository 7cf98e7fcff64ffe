#include "kernels/cpu/index_kernels.h"

#include <cstring>
#include <string>

#include "core/strided_loop.h"
#include "kernels/cpu/index_common.h"

namespace inplace::cpu {

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

// Element offsets into self of every position of the broadcast index shape (bounds-checked).
std::vector<int64_t> index_offsets(const Tensor& self, const AdvancedIndex& ai, const char* op) {
  std::vector<int64_t> offs(static_cast<size_t>(numel_of(ai.index_shape)), 0);
  for (size_t k = 0; k < ai.dims.size(); ++k) {
    const Tensor& idx = ai.indices[k];
    const int64_t d = ai.dims[k];
    const int64_t size = self.shape()[d], stride = self.strides()[d];
    const int64_t report = ai.report_dims[k];
    const Shape st = broadcast_strides(idx, ai.index_shape, op);
    visit_index_dtype(idx.dtype(), [&]<typename I>() {
      const I* p = idx.data<I>();
      int64_t* o = offs.data();
      strided_loop<1>(ai.index_shape, {st}, [&](auto off, int64_t n, auto s) {
        for (int64_t i = 0; i < n; ++i) {
          int64_t v = static_cast<int64_t>(p[off[0] + i * s[0]]);
          *o++ += wrap_index(v, size, report, op) * stride;
        }
      });
    });
  }
  return offs;
}

// Strides over result_shape: self's strides on the kept dims and the contiguous strides of
// the offset table on the index dims (0 elsewhere).
void result_strides(const Tensor& self, const AdvancedIndex& ai, Shape* self_st, Shape* adv_st) {
  const size_t nr = ai.result_shape.size();
  self_st->assign(nr, 0);
  adv_st->assign(nr, 0);
  const Shape adv_contig = contiguous_strides(ai.index_shape);
  std::vector<bool> indexed(static_cast<size_t>(self.dim()), false);
  for (int64_t d : ai.dims) indexed[d] = true;
  size_t r = 0;
  auto put_index_dims = [&] {
    for (size_t k = 0; k < ai.index_shape.size(); ++k) (*adv_st)[r++] = adv_contig[k];
  };
  if (ai.front) put_index_dims();
  bool placed = ai.front;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!indexed[d]) {
      (*self_st)[r++] = self.strides()[d];
    } else if (!placed) {
      put_index_dims();
      placed = true;
    }
  }
  IP_ASSERT(r == nr, "advanced index result strides cover the result dims");
}

}  // namespace

void index_gather(const Tensor& self, const AdvancedIndex& ai, const Tensor& out, const char* op) {
  IP_ASSERT(out.shape() == ai.result_shape && out.dtype() == self.dtype(),
            "index_gather output has the planned shape and self's dtype");
  const std::vector<int64_t> adv = index_offsets(self, ai, op);
  if (out.numel() == 0) return;
  Shape self_st, adv_st;
  result_strides(self, ai, &self_st, &adv_st);
  visit_itemsize(self.itemsize(), [&]<typename U>() {
    const U* sp = static_cast<const U*>(self.data_ptr());
    U* dp = static_cast<U*>(out.data_ptr());
    const int64_t* ap = adv.data();
    strided_loop<3>(ai.result_shape, {out.strides(), self_st, adv_st},
                    [&](auto off, int64_t n, auto st) {
                      U* d = dp + off[0];
                      if (st[2] == 0) {  // one index position: a run of a kept dim
                        const U* s = sp + off[1] + ap[off[2]];
                        if (st[0] == 1 && st[1] == 1) {
                          std::memcpy(d, s, static_cast<size_t>(n) * sizeof(U));
                        } else {
                          for (int64_t i = 0; i < n; ++i) d[i * st[0]] = s[i * st[1]];
                        }
                      } else {
                        const U* s = sp + off[1];
                        const int64_t* a = ap + off[2];
                        for (int64_t i = 0; i < n; ++i) d[i * st[0]] = s[i * st[1] + a[i * st[2]]];
                      }
                    });
  });
}

void index_put(const Tensor& self, const AdvancedIndex& ai, const Tensor& values, bool accumulate,
               const char* op, Scalar alpha) {
  bool fits = values.dim() <= static_cast<int64_t>(ai.result_shape.size());
  for (int64_t i = 0; fits && i < values.dim(); ++i) {
    int64_t s = values.shape()[values.dim() - 1 - i];
    int64_t r = ai.result_shape[ai.result_shape.size() - 1 - static_cast<size_t>(i)];
    fits = s == r || s == 1;
  }
  IP_CHECK(fits, kShapeMismatch, "[", op, "] shape mismatch: value tensor of shape ",
           shape_str(values.shape()), " cannot be broadcast to indexing result of shape ",
           shape_str(ai.result_shape));
  const std::vector<int64_t> adv = index_offsets(self, ai, op);
  if (numel_of(ai.result_shape) == 0) return;
  Tensor v = unaliased(values.dtype() == self.dtype() ? values : values.to(self.dtype()), self);
  const Shape vst = broadcast_strides(v, ai.result_shape, op);
  Shape self_st, adv_st;
  result_strides(self, ai, &self_st, &adv_st);
  const int64_t* ap = adv.data();
  if (!accumulate) {
    visit_itemsize(self.itemsize(), [&]<typename U>() {
      U* dp = static_cast<U*>(self.data_ptr());
      const U* vp = static_cast<const U*>(v.data_ptr());
      strided_loop<3>(ai.result_shape, {vst, self_st, adv_st}, [&](auto off, int64_t n, auto st) {
        const U* s = vp + off[0];
        if (st[2] == 0) {
          U* d = dp + off[1] + ap[off[2]];
          if (st[0] == 1 && st[1] == 1) {
            std::memcpy(d, s, static_cast<size_t>(n) * sizeof(U));
          } else {
            for (int64_t i = 0; i < n; ++i) d[i * st[1]] = s[i * st[0]];
          }
        } else {
          U* d = dp + off[1];
          const int64_t* a = ap + off[2];
          for (int64_t i = 0; i < n; ++i) d[i * st[1] + a[i * st[2]]] = s[i * st[0]];
        }
      });
    });
    return;
  }
  visit_dtype(self.dtype(), [&]<typename T>() {
    using M = opmath_t<T>;
    T* dp = self.data<T>();
    const T* vp = v.data<T>();
    const M al = alpha.to<M>();
    strided_loop<3>(ai.result_shape, {vst, self_st, adv_st}, [&](auto off, int64_t n, auto st) {
      const T* s = vp + off[0];
      T* d = dp + off[1];
      const int64_t* a = ap + off[2];
      for (int64_t i = 0; i < n; ++i) {
        T& x = d[i * st[1] + a[i * st[2]]];
        if constexpr (std::is_same_v<T, bool>) {
          x = x || (s[i * st[0]] && al);
        } else {
          x = convert<T>(static_cast<M>(static_cast<M>(x) + al * static_cast<M>(s[i * st[0]])));
        }
      }
    });
  });
}

// ---------------------------------------------------------------- masks

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

namespace {
Shape check_mask(const Tensor& self, const Tensor& mask, const char* op) {
  IP_CHECK(is_mask_dtype(mask.dtype()), kDTypeMismatch, "[", op, "] expected a bool mask, got ",
           dtype_name(mask.dtype()));
  return broadcast_shapes(self.shape(), mask.shape(), op);
}
}  // namespace

Tensor masked_select(const Tensor& self, const Tensor& mask, const char* op) {
  const Shape shape = check_mask(self, mask, op);
  const Tensor m = mask.dtype() == DType::kBool ? mask : mask.to(DType::kBool);
  const Shape sst = broadcast_strides(self, shape, op), mst = broadcast_strides(m, shape, op);
  int64_t count = 0;
  const bool* mp = numel_of(shape) ? m.data<bool>() : nullptr;
  strided_loop<1>(shape, {mst}, [&](auto off, int64_t n, auto st) {
    for (int64_t i = 0; i < n; ++i) count += mp[off[0] + i * st[0]];
  });
  Tensor out = Tensor::empty({count}, self.dtype());
  if (count == 0) return out;
  visit_itemsize(self.itemsize(), [&]<typename U>() {
    const U* sp = static_cast<const U*>(self.data_ptr());
    U* o = static_cast<U*>(out.data_ptr());
    strided_loop<2>(shape, {sst, mst}, [&](auto off, int64_t n, auto st) {
      for (int64_t i = 0; i < n; ++i)
        if (mp[off[1] + i * st[1]]) *o++ = sp[off[0] + i * st[0]];
    });
  });
  return out;
}

void masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source, const char* op) {
  IP_CHECK(is_mask_dtype(mask.dtype()), kDTypeMismatch, "[", op, "] expected a bool mask, got ",
           dtype_name(mask.dtype()));
  const Tensor m = mask.dtype() == DType::kBool ? mask : mask.to(DType::kBool);
  const Shape mst = broadcast_strides(m, self.shape(), op);
  if (self.numel() == 0) return;
  const bool* mp = m.data<bool>();
  int64_t count = 0;
  strided_loop<1>(self.shape(), {mst}, [&](auto off, int64_t n, auto st) {
    for (int64_t i = 0; i < n; ++i) count += mp[off[0] + i * st[0]];
  });
  IP_CHECK(count <= source.numel(), kShapeMismatch, "[", op, "] the mask ", shape_str(mask.shape()),
           " selects ", count, " elements of self ", shape_str(self.shape()), " but source ",
           shape_str(source.shape()), " has only ", source.numel());
  if (count == 0) return;
  const Tensor src = unaliased(source.to(self.dtype()).contiguous(), self);
  visit_itemsize(self.itemsize(), [&]<typename U>() {
    U* dp = static_cast<U*>(self.data_ptr());
    const U* s = static_cast<const U*>(src.data_ptr());
    strided_loop<2>(self.shape(), {self.strides(), mst}, [&](auto off, int64_t n, auto st) {
      for (int64_t i = 0; i < n; ++i)
        if (mp[off[1] + i * st[1]]) dp[off[0] + i * st[0]] = *s++;
    });
  });
}

}  // namespace inplace::cpu
