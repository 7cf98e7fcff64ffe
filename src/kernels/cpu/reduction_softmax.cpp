// softmax / log_softmax along one dim: subtract the max, exp in opmath, sum in double. Rows
// along a strided dim whose neighbours are contiguous (softmax over dim 0 of a row-major
// tensor) are processed in blocks of adjacent columns so memory is read row by row.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/strided_loop.h"
#include "kernels/cpu/reduction.h"
#include "kernels/cpu/reduction_exp.h"

namespace inplace::cpu {

namespace {

template <typename C>
inline C exp_op(C v) {
  if constexpr (std::is_same_v<C, float>)
    return exp_vectorizable(v);
  else
    return std::exp(v);
}

// Sum of floats in double, four chains.
double sum_floats(const float* p, int64_t n) {
  double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a0 += p[i];
    a1 += p[i + 1];
    a2 += p[i + 2];
    a3 += p[i + 3];
  }
  for (; i < n; ++i) a0 += p[i];
  return (a0 + a1) + (a2 + a3);
}

// Row max over eight lanes (the compiler turns them into vector max); NaN is skipped here and
// propagates through exp(x - max) instead.
float max_floats(const float* x, int64_t n) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float lane[8] = {kNegInf, kNegInf, kNegInf, kNegInf, kNegInf, kNegInf, kNegInf, kNegInf};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) lane[j] = x[i + j] > lane[j] ? x[i + j] : lane[j];
  float mx = kNegInf;
  for (int j = 0; j < 8; ++j) mx = lane[j] > mx ? lane[j] : mx;
  for (; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  return mx;
}

// The common case, a contiguous float32 row: vectorisable max, exp and scaling loops.
void softmax_row_float(const float* x, float* y, int64_t n, bool log) {
  const float mx = max_floats(x, n);
  if (!log) {
    for (int64_t i = 0; i < n; ++i) y[i] = exp_vectorizable(x[i] - mx);
    const float inv = static_cast<float>(1.0 / sum_floats(y, n));
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
    return;
  }
  // log: the exps go through a small buffer so x is read intact for the final pass.
  constexpr int64_t kChunk = 256;
  float buf[kChunk];
  double sum = 0;
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t len = std::min(kChunk, n - i0);
    for (int64_t i = 0; i < len; ++i) buf[i] = exp_vectorizable(x[i0 + i] - mx);
    sum += sum_floats(buf, len);
  }
  const double shift = static_cast<double>(mx) + std::log(sum);
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<double>(x[i]) - shift);
}

// A half row (bf16, fp16: opmath float) of unit stride, not log: each exp computed once, into a
// buffer of floats (a loop the compiler vectorises), and reused for the result; the same
// operations as the loop below (the max in order, the sum in order in double, each result
// exp * (1 / sum) rounded), so the same bits. x may be y.
template <typename T>
void softmax_row_half(const T* x, T* y, int64_t n) {
  std::vector<float> e(static_cast<size_t>(n));
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(x[i]);
    mx = v > mx ? v : mx;
  }
  for (int64_t i = 0; i < n; ++i) e[i] = exp_vectorizable(static_cast<float>(x[i]) - mx);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += e[i];
  const double inv = 1.0 / sum;
  for (int64_t i = 0; i < n; ++i) y[i] = convert<T>(static_cast<double>(e[i]) * inv);
}

template <typename T>
void softmax_row(const T* x, int64_t xs, T* y, int64_t ys, int64_t n, bool log) {
  if constexpr (std::is_same_v<T, float>) {
    if (xs == 1 && ys == 1) return softmax_row_float(x, y, n, log);
  }
  if constexpr (std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>) {
    if (xs == 1 && ys == 1 && !log) return softmax_row_half(x, y, n);
  }
  using C = opmath_t<T>;
  C mx = -std::numeric_limits<C>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const C v = static_cast<C>(x[i * xs]);
    mx = v > mx ? v : mx;
  }
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += exp_op<C>(static_cast<C>(x[i * xs]) - mx);
  if (log) {
    const double shift = static_cast<double>(mx) + std::log(sum);
    for (int64_t i = 0; i < n; ++i)
      y[i * ys] = convert<T>(static_cast<double>(static_cast<C>(x[i * xs])) - shift);
    return;
  }
  const double inv = 1.0 / sum;
  for (int64_t i = 0; i < n; ++i)
    y[i * ys] = convert<T>(static_cast<double>(exp_op<C>(static_cast<C>(x[i * xs]) - mx)) * inv);
}

inline constexpr int64_t kColumnBlock = 64;

// softmax along a strided dim for `w` adjacent columns of unit stride: every pass reads whole
// rows of the block, and the per-column state lives in small arrays.
template <typename T>
void softmax_columns(const T* x, int64_t xs, T* y, int64_t ys, int64_t n, int64_t w, bool log) {
  using C = opmath_t<T>;
  C mx[kColumnBlock];
  double sum[kColumnBlock] = {};
  for (int64_t j = 0; j < w; ++j) mx[j] = -std::numeric_limits<C>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const T* r = x + i * xs;
    for (int64_t j = 0; j < w; ++j) {
      const C v = static_cast<C>(r[j]);
      mx[j] = v > mx[j] ? v : mx[j];
    }
  }
  C e[kColumnBlock];
  for (int64_t i = 0; i < n; ++i) {
    const T* r = x + i * xs;
    for (int64_t j = 0; j < w; ++j) e[j] = exp_op<C>(static_cast<C>(r[j]) - mx[j]);
    for (int64_t j = 0; j < w; ++j) sum[j] += e[j];
  }
  if (log) {
    double shift[kColumnBlock];
    for (int64_t j = 0; j < w; ++j) shift[j] = static_cast<double>(mx[j]) + std::log(sum[j]);
    for (int64_t i = 0; i < n; ++i) {
      const T* r = x + i * xs;
      T* o = y + i * ys;
      for (int64_t j = 0; j < w; ++j)
        o[j] = convert<T>(static_cast<double>(static_cast<C>(r[j])) - shift[j]);
    }
    return;
  }
  double inv[kColumnBlock];
  for (int64_t j = 0; j < w; ++j) inv[j] = 1.0 / sum[j];
  for (int64_t i = 0; i < n; ++i) {
    const T* r = x + i * xs;
    T* o = y + i * ys;
    for (int64_t j = 0; j < w; ++j) e[j] = exp_op<C>(static_cast<C>(r[j]) - mx[j]);
    for (int64_t j = 0; j < w; ++j) o[j] = convert<T>(static_cast<double>(e[j]) * inv[j]);
  }
}

}  // namespace

void softmax(const Tensor& in, int64_t dim, bool log, const Tensor& out) {
  IP_ASSERT(is_floating(out.dtype()) && in.shape() == out.shape(), "softmax keeps the shape");
  Tensor x = in.dtype() == out.dtype() ? in : in.to(out.dtype());
  Tensor y = out;
  if (x.dim() == 0) {
    x = x.unsqueeze(0);
    y = y.unsqueeze(0);
  }
  IP_ASSERT(dim >= 0 && dim < x.dim(), "softmax dim is wrapped");
  const int64_t nd = x.dim();
  const int64_t n = x.shape()[dim], xs = x.strides()[dim], ys = y.strides()[dim];
  // Column blocks when the last dim is another one, contiguous in both tensors.
  const bool columns = dim != nd - 1 && x.shape()[nd - 1] > 1 && x.strides()[nd - 1] == 1 &&
                       y.strides()[nd - 1] == 1 && n > 1;
  Shape rows = x.shape();
  rows[dim] = 1;
  const int64_t inner = x.shape()[nd - 1];
  if (columns) rows[nd - 1] = 1;
  visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (kIsFloat<T>) {
      const T* xp = x.data<T>();
      T* yp = y.data<T>();
      strided_loop<2>(
          rows, {x.strides(), y.strides()},
          [&](const std::array<int64_t, 2>& off, int64_t cnt, const std::array<int64_t, 2>& st) {
            for (int64_t k = 0; k < cnt; ++k) {
              const T* xr = xp + off[0] + k * st[0];
              T* yr = yp + off[1] + k * st[1];
              if (!columns) {
                softmax_row(xr, xs, yr, ys, n, log);
                continue;
              }
              for (int64_t j0 = 0; j0 < inner; j0 += kColumnBlock)
                softmax_columns(xr + j0, xs, yr + j0, ys, n, std::min(kColumnBlock, inner - j0),
                                log);
            }
          });
    }
  });
}

}  // namespace inplace::cpu
