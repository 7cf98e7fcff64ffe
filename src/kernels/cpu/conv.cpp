#include "kernels/cpu/conv.h"

namespace inplace::cpu {

namespace {

template <typename T>
void conv1d_typed(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias,
                  const Conv1dParams& p) {
  const int64_t n_batch = x.size(0), c_in = x.size(1), len = x.size(2);
  const int64_t c_out = w.size(0), c_in_g = w.size(1), taps = w.size(2);
  const int64_t l_out = out.size(2), c_out_g = c_out / p.groups;
  const T* xd = x.data<T>();
  const T* wd = w.data<T>();
  const T* bd = bias.defined() ? bias.data<T>() : nullptr;
  T* od = out.data<T>();
  const auto& xs = x.strides();
  const auto& ws = w.strides();
  const auto& os = out.strides();
  (void)c_in;
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t co = 0; co < c_out; ++co) {
      const int64_t g = co / c_out_g;
      for (int64_t l = 0; l < l_out; ++l) {
        T acc = bd ? bd[co * bias.stride(0)] : T(0);
        for (int64_t ci = 0; ci < c_in_g; ++ci) {
          const T* xrow = xd + n * xs[0] + (g * c_in_g + ci) * xs[1];
          const T* wrow = wd + co * ws[0] + ci * ws[1];
          for (int64_t k = 0; k < taps; ++k) {
            const int64_t pos = l * p.stride + k * p.dilation - p.padding;
            if (pos < 0 || pos >= len) continue;
            acc += xrow[pos * xs[2]] * wrow[k * ws[2]];
          }
        }
        od[n * os[0] + co * os[1] + l * os[2]] = acc;
      }
    }
}

}  // namespace

void conv1d(const Tensor& out, const Tensor& x, const Tensor& w, const Tensor& bias,
            const Conv1dParams& p) {
  const DType dt = out.dtype();
  Tensor xc = x.dtype() == dt ? x : x.to(dt);
  Tensor wc = w.dtype() == dt ? w : w.to(dt);
  Tensor bc = !bias.defined() || bias.dtype() == dt ? bias : bias.to(dt);
  switch (dt) {
    case DType::kFloat32:
      conv1d_typed<float>(out, xc, wc, bc, p);
      break;
    case DType::kFloat64:
      conv1d_typed<double>(out, xc, wc, bc, p);
      break;
    default:
      IP_FAIL(kDTypeMismatch, "[conv1d] not implemented for ", dtype_name(dt),
              " (float32 and float64 are)");
  }
}

}  // namespace inplace::cpu
