// The cpu kernel of rotary_table (ops/rotary_table_ops.cpp): each element with the cpu's unfused
// kernels' arithmetic (a float32 product and + 0, std::cos or std::sin of a float, the casts of
// core/dtype.h's convert), so the step is bitwise the chain it replaces.
#include <cmath>

#include "core/dtype.h"
#include "core/half.h"
#include "kernels/cpu/registration.h"
#include "ops/rotary_table_args.h"

namespace inplace::cpu {

namespace {

using namespace rotary_table;

// positions[b, 0, s] as float32, converted as the chain's cast converts it.
float position_at(const Tensor& p, int64_t b, int64_t s) {
  const int64_t off = (p.size(0) == 1 ? 0 : b) * p.stride(0) + s * p.stride(2);
  return visit_dtype(p.dtype(), [&]<typename T>() { return convert<float>(p.data<T>()[off]); });
}

template <typename T>
void fill(const Tensor& out, const Tensor& inv, const Tensor& pos, bool sine) {
  const int64_t B = out.size(0), S = out.size(1), h = inv.size(1);
  const float* f = inv.data<float>();
  T* o = out.data<T>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) {
      const float p = position_at(pos, b, s);
      const float* fb = f + (inv.size(0) == 1 ? 0 : b) * inv.stride(0);
      for (int64_t j = 0; j < 2 * h; ++j) {
        const float product = fb[(j % h) * inv.stride(1)] * p;
        const float freq = product + 0.0f;
        const float v = sine ? std::sin(freq) : std::cos(freq);
        o[b * out.stride(0) + s * out.stride(1) + j * out.stride(2)] = convert<T>(v);
      }
    }
}

void run_rotary_table(const Args& a, const std::vector<Tensor>& outs, const KernelContext&) {
  const Tensor& out = outs[0];
  const Tensor& inv = a[kInvFreq].tensor;
  const Tensor& pos = a[kPositions].tensor;
  const bool sine = a[kSine].as_bool("rotary_table");
  switch (out.dtype()) {
    case DType::kBFloat16:
      return fill<BFloat16>(out, inv, pos, sine);
    case DType::kFloat16:
      return fill<Half>(out, inv, pos, sine);
    default:
      return fill<float>(out, inv, pos, sine);
  }
}

}  // namespace

void register_rotary_table_kernels(KernelTable& t) {
  t.add(DeviceType::kCpu, "rotary_table", run_rotary_table);
}

}  // namespace inplace::cpu
