// The cpu kernel of rotary_embedding, registered into the kernel table; its arguments are read
// as every backend reads them (ops/rotary_args.h).
#include "kernels/cpu/rotary.h"

#include "core/strided_loop.h"
#include "kernels/cpu/registration.h"
#include "ops/rotary_args.h"

namespace inplace::cpu {

void rotary_embedding(const Tensor& x, const Tensor& cos, const Tensor& sin, const Tensor& out) {
  const Shape& shape = out.shape();
  IP_ASSERT(!shape.empty() && shape.back() % 2 == 0, "rotary's last dim is even");
  const int64_t d = shape.back(), h = d / 2;
  const Shape xs = broadcast_strides(x, shape, "rotary_embedding"),
              cs = broadcast_strides(cos, shape, "rotary_embedding"),
              ss = broadcast_strides(sin, shape, "rotary_embedding");
  const Shape rows(shape.begin(), shape.end() - 1);
  auto lead = [](const Shape& s) { return Shape(s.begin(), s.end() - 1); };
  const int64_t xl = xs.back(), cl = cs.back(), sl = ss.back(), ol = out.strides().back();
  const float* xp = x.data<float>();
  const float* cp = cos.data<float>();
  const float* sp = sin.data<float>();
  float* op = out.data<float>();
  strided_loop<4>(
      rows, {lead(xs), lead(cs), lead(ss), lead(out.strides())},
      [&](const std::array<int64_t, 4>& off, int64_t n, const std::array<int64_t, 4>& st) {
        for (int64_t j = 0; j < n; ++j) {
          const float* xr = xp + off[0] + j * st[0];
          const float* cr = cp + off[1] + j * st[1];
          const float* sr = sp + off[2] + j * st[2];
          float* orow = op + off[3] + j * st[3];
          for (int64_t i = 0; i < h; ++i) {
            const float a = xr[i * xl] * cr[i * cl];
            const float b = -xr[(i + h) * xl] * sr[i * sl];
            orow[i * ol] = a + b;
          }
          for (int64_t i = h; i < d; ++i) {
            const float a = xr[i * xl] * cr[i * cl];
            const float b = xr[(i - h) * xl] * sr[i * sl];
            orow[i * ol] = a + b;
          }
        }
      });
}

void register_rotary_kernels(KernelTable& table) {
  table.add(DeviceType::kCpu, "rotary_embedding",
            [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
              rotary::result_shape(a);  // the operands' check, as the shape rule
              rotary_embedding(a[rotary::kX].tensor, a[rotary::kCos].tensor, a[rotary::kSin].tensor,
                               out[0]);
            });
}

}  // namespace inplace::cpu
