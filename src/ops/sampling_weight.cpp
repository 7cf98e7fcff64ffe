#include "ops/sampling_weight.h"

#include <vector>

namespace inplace::sampling {

namespace {

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("fma"))) void weights_fma(const double* x, int64_t n, double top, double t,
                                                int64_t* w) {
  for (int64_t i = 0; i < n; ++i) w[i] = weight(x[i], top, t);
}
#endif

void weights_plain(const double* x, int64_t n, double top, double t, int64_t* w) {
  for (int64_t i = 0; i < n; ++i) w[i] = weight(x[i], top, t);
}

}  // namespace

void weights(const double* x, int64_t n, double top, double t, int64_t* w) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool fma = __builtin_cpu_supports("fma");
  if (fma) return weights_fma(x, n, top, t, w);
#endif
  weights_plain(x, n, top, t, w);
}

RowDraw draw_in_order(const double* x, int64_t n, double temperature, uint64_t draw) {
  RowDraw out;
  double top = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] != x[i]) {
      out.first_nan = i;
      return out;
    }
    if (i == 0 || x[i] > top) top = x[i];
  }
  std::vector<int64_t> w(static_cast<size_t>(n));
  weights(x, n, top, temperature, w.data());
  uint64_t total = 0;
  for (int64_t v : w) total += static_cast<uint64_t>(v);
  out.total = static_cast<int64_t>(total);
  const uint64_t place = scaled_draw(draw, total);
  uint64_t running = 0;
  for (int64_t i = 0; i < n; ++i) {
    running += static_cast<uint64_t>(w[i]);
    if (running > place) {
      out.token = i;
      break;
    }
  }
  return out;  // a token always: place < total, and the largest logit weighs 2^42
}

}  // namespace inplace::sampling
