// Selection: where (cond ? a : b) and clamp (min(max(x, lo), hi)) with tensor or value operands.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/elementwise_loop.h"

namespace inplace::cpu {

void where(const Tensor& out, const Tensor& cond, const Operand& a, const Operand& b) {
  if (out.numel() == 0) return;
  const Tensor c = cond.dtype() == DType::kBool ? cond : cond.to(DType::kBool);
  detail::Source<bool> cs{c.data<bool>(), broadcast_strides(c, out.shape(), "where")};
  visit_dtype(out.dtype(), [&]<typename T>() {
    const auto x = detail::prepare<T>(a), y = detail::prepare<T>(b);
    detail::ternary_map<bool, T, T, T>(out, cs, detail::source(x, out.shape()),
                                       detail::source(y, out.shape()),
                                       [](bool k, T p, T q) { return k ? p : q; });
  });
}

void clamp(const Tensor& out, const Operand& self, const std::optional<Operand>& lo,
           const std::optional<Operand>& hi) {
  if (out.numel() == 0) return;
  // torch: a NaN tensor bound makes the result NaN; a NaN number bound is ignored.
  const bool nan_bounds = (lo && lo->is_tensor()) || (hi && hi->is_tensor());
  visit_dtype(out.dtype(), [&]<typename T>() {
    using M = opmath_t<T>;
    using Limits = std::numeric_limits<M>;
    const auto x = detail::prepare<T>(self);
    // A missing bound is the widest value, so one functor serves all three forms.
    auto bound = [&](const std::optional<Operand>& o, M widest) {
      if (o) return detail::prepare<T>(*o);
      detail::Prepared<T> p;
      p.stored = T(widest);
      p.value = widest;
      return p;
    };
    M lowest = Limits::lowest(), highest = Limits::max();
    if constexpr (Limits::has_infinity) lowest = -Limits::infinity(), highest = Limits::infinity();
    const auto l = bound(lo, lowest), h = bound(hi, highest);
    detail::ternary_map<T, T, T, T>(out, detail::source(x, out.shape()),
                                    detail::source(l, out.shape()), detail::source(h, out.shape()),
                                    [=](T xv, T lv, T hv) {
                                      const M v = xv, lb = lv, hb = hv;
                                      if constexpr (std::is_floating_point_v<M>) {
                                        if (nan_bounds && (lb != lb || hb != hb))
                                          return T(Limits::quiet_NaN());
                                      }
                                      return T(std::min(std::max(v, lb), hb));
                                    });
  });
}

}  // namespace inplace::cpu
