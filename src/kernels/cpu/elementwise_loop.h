// The loops every elementwise kernel shares (internal to kernels/cpu/elementwise_*.cpp).
// Each map has a flat fast path for contiguous operands in the same element order (a plain
// loop the compiler vectorizes) and falls back to strided_loop, whose inner loop again takes a
// unit-stride / broadcast-scalar path where it can.
#pragma once
#include <array>
#include <cstdint>

#include "core/strided_loop.h"
#include "core/tensor.h"
#include "kernels/cpu/elementwise.h"

namespace inplace::cpu::detail {

// Whether contiguous a and b list their elements in the same order: same shape once size-1
// dims are dropped (broadcasting only ever adds size-1 dims when numel matches).
inline bool same_order(const Shape& a, const Shape& b) {
  size_t i = 0, j = 0;
  while (true) {
    while (i < a.size() && a[i] == 1) ++i;
    while (j < b.size() && b[j] == 1) ++j;
    if (i == a.size() || j == b.size()) return i == a.size() && j == b.size();
    if (a[i++] != b[j++]) return false;
  }
}

inline bool flat_with(const Tensor& out, const Tensor& in) {
  return in.is_contiguous() && same_order(in.shape(), out.shape());
}

// out[i] = f(in[i]), `in` broadcast to out's shape.
template <typename I, typename O, typename F>
void unary_map(const Tensor& out, const Tensor& in, F&& f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  O* po = out.data<O>();
  const I* pi = in.data<I>();
  if (out.is_contiguous() && flat_with(out, in)) {
    for (int64_t i = 0; i < n; ++i) po[i] = O(f(pi[i]));
    return;
  }
  Shape si = broadcast_strides(in, out.shape(), "elementwise");
  strided_loop<2>(out.shape(), {out.strides(), si}, [&](auto off, int64_t cnt, auto st) {
    O* o = po + off[0];
    const I* x = pi + off[1];
    if (st[0] == 1 && st[1] == 1) {
      for (int64_t i = 0; i < cnt; ++i) o[i] = O(f(x[i]));
    } else if (st[1] == 0) {
      const O v = O(f(x[0]));
      for (int64_t i = 0; i < cnt; ++i) o[i * st[0]] = v;
    } else {
      for (int64_t i = 0; i < cnt; ++i) o[i * st[0]] = O(f(x[i * st[1]]));
    }
  });
}

// out[i] = f(a[i], b[i]), both broadcast to out's shape.
template <typename A, typename B, typename O, typename F>
void binary_map(const Tensor& out, const Tensor& a, const Tensor& b, F&& f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  O* po = out.data<O>();
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  if (out.is_contiguous() && flat_with(out, a) && flat_with(out, b)) {
    for (int64_t i = 0; i < n; ++i) po[i] = O(f(pa[i], pb[i]));
    return;
  }
  Shape sa = broadcast_strides(a, out.shape(), "elementwise");
  Shape sb = broadcast_strides(b, out.shape(), "elementwise");
  strided_loop<3>(out.shape(), {out.strides(), sa, sb}, [&](auto off, int64_t cnt, auto st) {
    O* o = po + off[0];
    const A* x = pa + off[1];
    const B* y = pb + off[2];
    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
      for (int64_t i = 0; i < cnt; ++i) o[i] = O(f(x[i], y[i]));
    } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
      const B yv = y[0];
      for (int64_t i = 0; i < cnt; ++i) o[i] = O(f(x[i], yv));
    } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
      const A xv = x[0];
      for (int64_t i = 0; i < cnt; ++i) o[i] = O(f(xv, y[i]));
    } else {
      for (int64_t i = 0; i < cnt; ++i) o[i * st[0]] = O(f(x[i * st[1]], y[i * st[2]]));
    }
  });
}

// Every element of out = v.
template <typename O>
void fill_value(const Tensor& out, O v) {
  if (out.numel() == 0) return;
  O* po = out.data<O>();
  strided_loop<1>(out.shape(), {out.strides()}, [&](auto off, int64_t cnt, auto st) {
    O* o = po + off[0];
    if (st[0] == 1) {
      for (int64_t i = 0; i < cnt; ++i) o[i] = v;
    } else {
      for (int64_t i = 0; i < cnt; ++i) o[i * st[0]] = v;
    }
  });
}

// A ternary input: a tensor, or one value (stride 0 everywhere).
template <typename T>
struct Source {
  const T* data = nullptr;
  Shape strides;  // broadcast to the output's shape
};

// out[i] = f(a[i], b[i], c[i]); each source is a tensor or a single value.
template <typename A, typename B, typename C, typename O, typename F>
void ternary_map(const Tensor& out, const Source<A>& a, const Source<B>& b, const Source<C>& c,
                 F&& f) {
  if (out.numel() == 0) return;
  O* po = out.data<O>();
  strided_loop<4>(out.shape(), {out.strides(), a.strides, b.strides, c.strides},
                  [&](auto off, int64_t cnt, auto st) {
                    O* o = po + off[0];
                    const A* x = a.data + off[1];
                    const B* y = b.data + off[2];
                    const C* z = c.data + off[3];
                    if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1) {
                      for (int64_t i = 0; i < cnt; ++i) o[i] = O(f(x[i], y[i], z[i]));
                    } else {
                      for (int64_t i = 0; i < cnt; ++i)
                        o[i * st[0]] = O(f(x[i * st[1]], y[i * st[2]], z[i * st[3]]));
                    }
                  });
}

// An operand ready for a kernel computing in T: a tensor of dtype T (converted if it was not),
// or one value in opmath. One-element tensors become values, so a 0-dim operand never costs a
// conversion pass or an allocation.
template <typename T>
struct Prepared {
  Tensor tensor;  // undefined when the operand is a value
  opmath_t<T> value{};
  T stored{};  // the value as T, for kernels that read it through a pointer
};

// `scalar_in_opmath`: a Python number keeps its full precision in opmath instead of being
// rounded to T first (torch does this for mul and div of half types).
template <typename T>
Prepared<T> prepare(const Operand& o, bool scalar_in_opmath = false) {
  using M = opmath_t<T>;
  Prepared<T> p;
  if (o.is_tensor() && o.tensor.numel() != 1) {
    p.tensor = o.tensor.dtype() == dtype_of<T>() ? o.tensor : o.tensor.to(dtype_of<T>());
    return p;
  }
  if (o.is_tensor()) {  // one element, converted like a cast to T
    p.stored = visit_dtype(o.tensor.dtype(),
                           [&]<typename S>() { return convert<T>(*o.tensor.data<S>()); });
    p.value = static_cast<M>(p.stored);
    return p;
  }
  p.stored = o.scalar.to<T>();
  p.value = scalar_in_opmath ? o.scalar.to<M>() : static_cast<M>(p.stored);
  return p;
}

template <typename T>
Source<T> source(const Prepared<T>& p, const Shape& out_shape) {
  Source<T> s;
  if (p.tensor.defined()) {
    s.data = p.tensor.template data<T>();
    s.strides = broadcast_strides(p.tensor, out_shape, "elementwise");
  } else {
    s.data = &p.stored;
    s.strides.assign(out_shape.size(), 0);
  }
  return s;
}

// Runs a binary functor in opmath over two prepared operands, taking the unary path when
// one side is a value.
template <typename T, typename O, typename F>
void run_binary(const Tensor& out, const Prepared<T>& x, const Prepared<T>& y, F&& f) {
  using M = opmath_t<T>;
  if (!x.tensor.defined() && !y.tensor.defined()) {
    fill_value<O>(out, O(f(x.value, y.value)));
  } else if (!y.tensor.defined()) {
    const M yv = y.value;
    unary_map<T, O>(out, x.tensor, [&f, yv](M a) { return f(a, yv); });
  } else if (!x.tensor.defined()) {
    const M xv = x.value;
    unary_map<T, O>(out, y.tensor, [&f, xv](M b) { return f(xv, b); });
  } else {
    binary_map<T, T, O>(out, x.tensor, y.tensor, [&f](M a, M b) { return f(a, b); });
  }
}

}  // namespace inplace::cpu::detail
