// The cpu kernels of rotary_embedding and rms_norm_rotary, registered into the kernel table;
// their arguments are read as every backend reads them (ops/rotary_args.h). rms_norm_rotary is
// its two steps run by their own kernels (kernels/cpu/chain.h): bitwise the unfused pair.
#include "kernels/cpu/rotary.h"

#include "core/strided_loop.h"
#include "kernels/cpu/chain.h"
#include "kernels/cpu/registration.h"
#include "kernels/cpu/upcast_rms_norm.h"
#include "ops/nn_args.h"
#include "ops/rotary_args.h"

namespace inplace::cpu {

namespace {

// T is float, BFloat16 or Half; arithmetic in float, each result rounded to T (the chain's
// mul, mul and add at T: PyTorch's opmath).
template <typename T>
void rotary_typed(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor& out) {
  const Shape& shape = out.shape();
  const int64_t d = shape.back(), h = d / 2;
  const Shape xs = broadcast_strides(x, shape, "rotary_embedding"),
              cs = broadcast_strides(cos, shape, "rotary_embedding"),
              ss = broadcast_strides(sin, shape, "rotary_embedding");
  const Shape rows(shape.begin(), shape.end() - 1);
  auto lead = [](const Shape& s) { return Shape(s.begin(), s.end() - 1); };
  const int64_t xl = xs.back(), cl = cs.back(), sl = ss.back(), ol = out.strides().back();
  const T* xp = x.data<T>();
  const T* cp = cos.data<T>();
  const T* sp = sin.data<T>();
  T* op = out.data<T>();
  auto f = [](T v) { return static_cast<float>(v); };
  auto round = [](float v) { return static_cast<float>(static_cast<T>(v)); };
  strided_loop<4>(
      rows, {lead(xs), lead(cs), lead(ss), lead(out.strides())},
      [&](const std::array<int64_t, 4>& off, int64_t n, const std::array<int64_t, 4>& st) {
        for (int64_t j = 0; j < n; ++j) {
          const T* xr = xp + off[0] + j * st[0];
          const T* cr = cp + off[1] + j * st[1];
          const T* sr = sp + off[2] + j * st[2];
          T* orow = op + off[3] + j * st[3];
          for (int64_t i = 0; i < h; ++i) {
            const float a = round(f(xr[i * xl]) * f(cr[i * cl]));
            const float b = round(-f(xr[(i + h) * xl]) * f(sr[i * sl]));
            orow[i * ol] = static_cast<T>(a + b);
          }
          for (int64_t i = h; i < d; ++i) {
            const float a = round(f(xr[i * xl]) * f(cr[i * cl]));
            const float b = round(f(xr[(i - h) * xl]) * f(sr[i * sl]));
            orow[i * ol] = static_cast<T>(a + b);
          }
        }
      });
}

}  // namespace

void rotary_embedding(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor& out) {
  const Shape& shape = out.shape();
  IP_ASSERT(!shape.empty() && shape.back() % 2 == 0, "rotary's last dim is even");
  IP_ASSERT(x.dtype() == out.dtype() && cos.dtype() == out.dtype() && sin.dtype() == out.dtype(),
            "rotary's operands share the result's dtype");
  switch (out.dtype()) {
    case DType::kFloat32:
      return rotary_typed<float>(x, cos, sin, out);
    case DType::kBFloat16:
      return rotary_typed<BFloat16>(x, cos, sin, out);
    case DType::kFloat16:
      return rotary_typed<Half>(x, cos, sin, out);
    default:
      IP_FAIL(kDTypeMismatch, "[rotary_embedding] no kernel for ", dtype_name(out.dtype()));
  }
}

void register_rotary_kernels(KernelTable& table) {
  table.add(DeviceType::kCpu, "rotary_embedding",
            [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
              rotary::result_shape(a);  // the operands' check, as the shape rule
              rotary_embedding(a[rotary::kX].tensor, a[rotary::kCos].tensor, a[rotary::kSin].tensor,
                               out[0]);
            });
  table.add(DeviceType::kCpu, "rms_norm_rotary",
            [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
              static const ChainOp kNorm("upcast_rms_norm");
              const Tensor& x = a[0].tensor;
              const double offset = nn::norm_weight_offset(a, nn::kNormRotaryOffsetArg);
              const NormRows rows{static_cast<float>(a[2].as_double("rms_norm_rotary")),
                                  a[3].as_bool("rms_norm_rotary"), static_cast<float>(offset)};
              // The norm of heads xs: the row kernel where it applies, else its own op.
              auto norm = [&](const Tensor& xs, const Value& w) {
                Tensor h = Tensor::empty(xs.shape(), xs.dtype());
                if (w.is_tensor() && upcast_rms_norm_rows(xs, w.tensor, nullptr, h, rows)) return h;
                return kNorm({Value::from_tensor(xs), w, a[2], a[3], Value::floating(offset)});
              };
              if (a.size() <= 6 || a[6].is_none()) {
                rotary_embedding(norm(x, a[1]), a[4].tensor, a[5].tensor, out[0]);
                return;
              }
              // Heads [0, split) of dim -2 with weight, the rest with weight2: each part its own
              // pair of steps (cos and sin cut alike where they are not broadcast there).
              const int64_t split = a[7].as_int("rms_norm_rotary"), heads = x.size(-2);
              auto part = [&](const Tensor& t, int64_t b, int64_t e) {
                return t.dim() >= 2 && t.size(-2) == heads ? t.slice(t.dim() - 2, b, e) : t;
              };
              for (int i = 0; i < 2; ++i) {
                const int64_t b = i == 0 ? 0 : split, e = i == 0 ? split : heads;
                const Tensor h = norm(x.slice(x.dim() - 2, b, e), i == 0 ? a[1] : a[6]);
                rotary_embedding(h, part(a[4].tensor, b, e), part(a[5].tensor, b, e),
                                 out[0].slice(out[0].dim() - 2, b, e));
              }
            });
}

}  // namespace inplace::cpu
