#include "kernels/cpu/index_kernels.h"

#include <cstring>
#include <string>

#include "core/strided_loop.h"
#include "kernels/cpu/index_common.h"

namespace inplace::cpu {

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
          if (v < 0 && !ai.wrap_negative) throw_index_out_of_bounds(op, v, report, size);
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
