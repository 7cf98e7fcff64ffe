// max/min values and arg-indices. NaN wins (and its first occurrence), ties keep the first
// occurrence, as torch does.
#include <cmath>

#include "kernels/cpu/reduction_loop.h"
#include "kernels/cpu/reduction_run.h"

namespace inplace::cpu {

namespace {

template <typename T, bool kMax>
void extreme_impl(const ReduceLoop& p, const Tensor& in, const Tensor& values,
                  const Tensor& indices) {
  using C = opmath_t<T>;
  const T* ip = in.data<T>();
  T* vp = values.defined() ? values.data<T>() : nullptr;
  int64_t* xp = indices.defined() ? indices.data<int64_t>() : nullptr;
  if (is_outer_reduction(p)) {
    // A block of adjacent outputs at a time: input rows are read contiguously.
    for_each_output_block(p, [&](int64_t ib, int64_t ob, int64_t w, int64_t os) {
      C best[kOutputBlock];
      int64_t best_pos[kOutputBlock] = {};
      for (int64_t j = 0; j < w; ++j) best[j] = static_cast<C>(ip[ib + j]);
      for_each_run(p, ib, [&](int64_t off, int64_t n, int64_t s, int64_t pos) {
        for (int64_t r = 0; r < n; ++r) {
          const T* row = ip + off + r * s;
          for (int64_t j = 0; j < w; ++j) {
            const C v = static_cast<C>(row[j]);
            if (better<kMax>(v, best[j])) {
              best[j] = v;
              best_pos[j] = pos + r;
            }
          }
        }
      });
      for (int64_t j = 0; j < w; ++j) {
        if (vp) vp[ob + j * os] = static_cast<T>(best[j]);
        if (xp) xp[ob + j * os] = best_pos[j];
      }
    });
    return;
  }
  for_each_output(p, [&](int64_t io, int64_t oo) {
    C best = static_cast<C>(ip[io]);  // position 0 of the reduced dims sits at the base offset
    int64_t best_pos = 0;
    for_each_run(p, io, [&](int64_t off, int64_t n, int64_t s, int64_t pos) {
      const T* q = ip + off;
      if (!xp && s == 1 && n > 0) {  // values only: the run's best, then against the others'
        const C v = extreme_run<kMax>(q, n);
        if (better<kMax>(v, best)) best = v;
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        const C v = static_cast<C>(q[i * s]);
        if (better<kMax>(v, best)) {
          best = v;
          best_pos = pos + i;
        }
      }
    });
    if (vp) vp[oo] = static_cast<T>(best);
    if (xp) xp[oo] = best_pos;
  });
}

}  // namespace

void extreme(const Tensor& in, const DimMask& reduced, bool is_max, const Tensor& values,
             const Tensor& indices) {
  IP_ASSERT(values.defined() || indices.defined(), "extreme has an output");
  IP_ASSERT(!values.defined() || values.dtype() == in.dtype(), "max/min values keep the dtype");
  IP_ASSERT(!indices.defined() || indices.dtype() == DType::kInt64, "indices are int64");
  const Tensor& shape_ref = values.defined() ? values : indices;
  IP_ASSERT(!values.defined() || !indices.defined() || values.strides() == indices.strides(),
            "values and indices share a layout");
  const ReduceLoop p = make_reduce_loop(in, reduced, shape_ref);
  IP_ASSERT(p.red_numel > 0 || shape_ref.numel() == 0, "max/min reduce a non-empty set");
  if (shape_ref.numel() == 0) return;
  visit_dtype(in.dtype(), [&]<typename T>() {
    if (is_max)
      extreme_impl<T, true>(p, in, values, indices);
    else
      extreme_impl<T, false>(p, in, values, indices);
  });
}

}  // namespace inplace::cpu
