#include "kernels/cpu/scatter_kernels.h"

#include <cmath>
#include <limits>

#include "core/strided_loop.h"
#include "kernels/cpu/index_common.h"
#include "kernels/cpu/registration.h"
#include "ops/index_args.h"

namespace inplace::cpu {

namespace {

// torch treats 0-dim operands of gather/scatter as 1-dim of size 1.
Tensor at_least_1d(const Tensor& t) {
  return t.defined() && t.dim() == 0 ? t.unsqueeze(0) : t;
}

}  // namespace

void gather(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out,
            const char* op) {
  if (index.numel() == 0) return;
  const Tensor s = at_least_1d(self), i = at_least_1d(index), o = at_least_1d(out);
  Shape sst = s.strides();
  const int64_t size = s.shape()[dim], stride = s.strides()[dim];
  sst[dim] = 0;
  visit_itemsize(self.itemsize(), [&]<typename U>() {
    visit_index_dtype(index.dtype(), [&]<typename I>() {
      const U* sp = static_cast<const U*>(s.data_ptr());
      const I* ip = i.data<I>();
      U* dp = static_cast<U*>(o.data_ptr());
      strided_loop<3>(
          i.shape(), {o.strides(), sst, i.strides()}, [&](auto off, int64_t n, auto st) {
            for (int64_t k = 0; k < n; ++k) {
              int64_t v = wrap_index(static_cast<int64_t>(ip[off[2] + k * st[2]]), size, dim, op);
              dp[off[0] + k * st[0]] = sp[off[1] + k * st[1] + v * stride];
            }
          });
    });
  });
}

namespace {

template <ScatterReduce R, typename T>
inline void combine(T& x, T v) {
  using M = opmath_t<T>;
  if constexpr (R == ScatterReduce::kNone) {
    x = v;
  } else if constexpr (std::is_same_v<T, bool>) {
    if constexpr (R == ScatterReduce::kSum || R == ScatterReduce::kMax)
      x = x || v;
    else
      x = x && v;  // prod, min
  } else if constexpr (R == ScatterReduce::kSum) {
    x = convert<T>(static_cast<M>(static_cast<M>(x) + static_cast<M>(v)));
  } else if constexpr (R == ScatterReduce::kProd) {
    x = convert<T>(static_cast<M>(static_cast<M>(x) * static_cast<M>(v)));
  } else {
    M a = static_cast<M>(x), b = static_cast<M>(v);
    if constexpr (kIsFloat<T>) {
      if (std::isnan(a) || std::isnan(b)) {
        x = convert<T>(std::isnan(a) ? a : b);
        return;
      }
    }
    if constexpr (R == ScatterReduce::kMax)
      x = b > a ? v : x;
    else
      x = b < a ? v : x;
  }
}

template <ScatterReduce R, typename T>
void scatter_typed(const Tensor& s, int64_t dim, const Tensor& i, const T* vp, const Shape& vst,
                   const char* op) {
  Shape sst = s.strides();
  const int64_t size = s.shape()[dim], stride = s.strides()[dim];
  sst[dim] = 0;
  T* dp = s.data<T>();
  visit_index_dtype(i.dtype(), [&]<typename I>() {
    const I* ip = i.data<I>();
    strided_loop<3>(i.shape(), {sst, vst, i.strides()}, [&](auto off, int64_t n, auto st) {
      for (int64_t k = 0; k < n; ++k) {
        int64_t v = wrap_index(static_cast<int64_t>(ip[off[2] + k * st[2]]), size, dim, op);
        combine<R>(dp[off[0] + k * st[0] + v * stride], vp[off[1] + k * st[1]]);
      }
    });
  });
}

}  // namespace

void scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, Scalar value,
             ScatterReduce reduce, const char* op) {
  IP_ASSERT(reduce != ScatterReduce::kMean, "scatter's mean goes through scatter_reduce_two");
  if (index.numel() == 0) return;
  const Tensor s = at_least_1d(self), i = at_least_1d(unaliased(index, self));
  Tensor v;
  Shape vst;
  if (src.defined()) {
    v = at_least_1d(unaliased(src.dtype() == self.dtype() ? src : src.to(self.dtype()), self));
    vst = v.strides();
  } else {
    v = Tensor::scalar(value, self.dtype());
    vst.assign(static_cast<size_t>(i.dim()), 0);
  }
  visit_dtype(self.dtype(), [&]<typename T>() {
    const T* vp = v.data<T>();
    switch (reduce) {
      case ScatterReduce::kNone:
        scatter_typed<ScatterReduce::kNone, T>(s, dim, i, vp, vst, op);
        break;
      case ScatterReduce::kSum:
        scatter_typed<ScatterReduce::kSum, T>(s, dim, i, vp, vst, op);
        break;
      case ScatterReduce::kProd:
        scatter_typed<ScatterReduce::kProd, T>(s, dim, i, vp, vst, op);
        break;
      case ScatterReduce::kMax:
        scatter_typed<ScatterReduce::kMax, T>(s, dim, i, vp, vst, op);
        break;
      case ScatterReduce::kMin:
        scatter_typed<ScatterReduce::kMin, T>(s, dim, i, vp, vst, op);
        break;
      case ScatterReduce::kMean:
        break;
    }
  });
}

namespace {
template <typename T>
Scalar identity_of(ScatterReduce r) {
  if constexpr (std::is_same_v<T, bool>) {
    return Scalar(r == ScatterReduce::kProd || r == ScatterReduce::kMin);
  } else {
    using L = std::numeric_limits<std::conditional_t<kIsFloat<T>, double, T>>;
    switch (r) {
      case ScatterReduce::kProd:
        return Scalar(int64_t{1});
      case ScatterReduce::kMax:
        if constexpr (kIsFloat<T>)
          return Scalar(-L::infinity());
        else
          return Scalar(static_cast<int64_t>(L::lowest()));
      case ScatterReduce::kMin:
        if constexpr (kIsFloat<T>)
          return Scalar(L::infinity());
        else
          return Scalar(static_cast<int64_t>(L::max()));
      default:
        return Scalar(int64_t{0});
    }
  }
}
}  // namespace

void scatter_reduce_two(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                        ScatterReduce reduce, bool include_self, const char* op) {
  if (index.numel() == 0) return;
  const Tensor idx = unaliased(index, self);
  const Tensor source = unaliased(src, self);
  if (!include_self) {
    Scalar init = visit_dtype(self.dtype(), [&]<typename T>() { return identity_of<T>(reduce); });
    scatter(self, dim, idx, Tensor(), init, ScatterReduce::kNone, op);
  }
  if (reduce != ScatterReduce::kMean) {
    scatter(self, dim, idx, source, Scalar(), reduce, op);
    return;
  }
  scatter(self, dim, idx, source, Scalar(), ScatterReduce::kSum, op);
  Tensor count = Tensor::full(self.shape(), Scalar(int64_t{include_self ? 1 : 0}), DType::kInt64);
  scatter(count, dim, idx, Tensor(), Scalar(int64_t{1}), ScatterReduce::kSum, op);
  const int64_t* cp = count.data<int64_t>();
  visit_dtype(self.dtype(), [&]<typename T>() {
    using M = opmath_t<T>;
    T* p = self.data<T>();
    strided_loop<2>(self.shape(), {self.strides(), count.strides()},
                    [&](auto off, int64_t n, auto st) {
                      for (int64_t k = 0; k < n; ++k) {
                        int64_t c = std::max<int64_t>(cp[off[1] + k * st[1]], 1);
                        T& x = p[off[0] + k * st[0]];
                        if constexpr (std::is_same_v<T, bool>) {
                          (void)c;
                        } else if constexpr (kIsFloat<T>) {
                          x = convert<T>(static_cast<M>(static_cast<M>(x) / static_cast<M>(c)));
                        } else {
                          int64_t a = static_cast<int64_t>(x), q = a / c;
                          if ((a % c != 0) && ((a < 0) != (c < 0))) --q;  // floor division
                          x = static_cast<T>(q);
                        }
                      }
                    });
  });
}

namespace {

void run_scatter(const Tensor& target, const ScatterCall& c, ScatterForm form, const char* op) {
  if (form == ScatterForm::kReduceTwo)
    scatter_reduce_two(target, c.dim, c.index, c.src, c.reduce, c.include_self, op);
  else
    scatter(target, c.dim, c.index, c.src, c.value, c.reduce, op);
}

// The functional overload (a copy of self, then the writes) and its in-place form name_ (the
// writes into self, run directly).
void add_scatter(KernelTable& t, ScatterForm form, const std::string& name,
                 const std::string& overload) {
  const std::string ov = overload.empty() ? "" : "." + overload;
  t.add(DeviceType::kCpu, name + ov,
        [form, name](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          const ScatterCall c = read_scatter_call(a, form, name.c_str());
          copy_region(out[0], c.self);
          run_scatter(out[0], c, form, name.c_str());
        });
  const std::string name_ = name + "_";
  t.add_eager(DeviceType::kCpu, name_ + ov, [form, name_](const Args& a) {
    const ScatterCall c = read_scatter_call(a, form, name_.c_str());
    run_scatter(a[0].as_tensor(name_.c_str()), c, form, name_.c_str());
    return a[0];
  });
}

}  // namespace

void register_scatter_kernels(KernelTable& table) {
  table.add(DeviceType::kCpu, "gather",
            [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
              const Tensor self = indexing::tensor_arg(a[0], "gather");
              gather(self, gather_dim(self, a), indexing::tensor_arg(a[2], "gather"), out[0],
                     "gather");
            });
  add_scatter(table, ScatterForm::kSrc, "scatter", "src");
  add_scatter(table, ScatterForm::kValue, "scatter", "value");
  add_scatter(table, ScatterForm::kReduce, "scatter", "reduce");
  add_scatter(table, ScatterForm::kValueReduce, "scatter", "value_reduce");
  add_scatter(table, ScatterForm::kAdd, "scatter_add", "");
  add_scatter(table, ScatterForm::kReduceTwo, "scatter_reduce", "two");
}

}  // namespace inplace::cpu
