// upcast_rms_norm's cpu kernel (Hugging Face's RMSNorm at a half dtype, ops/nn_ops.cpp): every
// element is bitwise what the unfused steps compute: the float32 upcast, x^2, the mean over the
// last dim, + eps, rsqrt, the scaling, then the weight on the result rounded to the input's dtype
// (or in float32 with weight_in_float, rounded once at the end).
//
// Rows of a contiguous input with a contiguous weight take one pass of fused code that performs
// each of those kernels' operations on each element (elementwise_math.h and reduction_sum.cpp):
// pow(x, 2) is x * x in float; the mean's sum is in double over four chains (element i on chain
// i % 4 while four remain, the rest on the first; then (a0 + a1) + (a2 + a3)), divided by d in
// double and rounded to float; + eps in float (eps rounded to float, as add rounds a Python
// number); rsqrt is 1 / sqrt in float; then h = x * rsqrt in float, rounded to the dtype, times
// the weight in float, rounded again. Anything else runs the chain's own kernels
// (kernels/cpu/chain.h). tests/kernels/upcast_rms_norm_test.cpp holds the two to each other (the
// sum of squares in double rarely rounds at all: its order shows in no float result the test
// could draw, so the order is kept by construction).
#include <cmath>

#include "core/half.h"
#include "kernels/cpu/chain.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/registration.h"
#include "ops/nn_args.h"

namespace inplace::cpu {

namespace {

const ChainOp kPow("pow.Tensor_Scalar"), kMean("mean.dim"), kAdd("add.Tensor"), kRsqrt("rsqrt"),
    kMul("mul.Tensor");

void run_chain(const Args& a, const Tensor& out, bool in_float) {
  const Tensor& x = a[0].tensor;
  const Value& w = a[1];
  Tensor up = Tensor::empty(x.shape(), DType::kFloat32);
  copy_cast(up, x);
  const Value upv = Value::from_tensor(up);
  const Tensor var = kMean({Value::from_tensor(kPow({upv, Value::integer(2)})),
                            Value::int_list({-1}), Value::boolean(true)});
  const Tensor inv = kRsqrt({Value::from_tensor(kAdd({Value::from_tensor(var), a[2]}))});
  const Tensor h = kMul({upv, Value::from_tensor(inv)});
  if (in_float) {  // (h * w).to(dt)
    copy_cast(out, kMul({Value::from_tensor(h), w}));
    return;
  }
  Tensor rounded = Tensor::empty(x.shape(), x.dtype());  // w * h.to(dt)
  copy_cast(rounded, h);
  kMul.into({w, Value::from_tensor(rounded)}, out);
}

// One row of d elements: the chain's operations, element by element.
template <typename T, typename W>
void row(const T* x, const W* w, T* y, int64_t d, float eps) {
  double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  int64_t i = 0;
  auto sq = [&](int64_t j) {
    const float u = static_cast<float>(x[j]);
    return static_cast<double>(u * u);
  };
  for (; i + 4 <= d; i += 4) {
    a0 += sq(i);
    a1 += sq(i + 1);
    a2 += sq(i + 2);
    a3 += sq(i + 3);
  }
  for (; i < d; ++i) a0 += sq(i);
  const float var = static_cast<float>(((a0 + a1) + (a2 + a3)) / static_cast<double>(d));
  const float inv = 1.0f / std::sqrt(var + eps);
  for (int64_t j = 0; j < d; ++j) {
    const float h = static_cast<float>(x[j]) * inv;
    if constexpr (std::is_same_v<W, float>)
      y[j] = T(h * w[j]);
    else
      y[j] = T(static_cast<float>(w[j]) * static_cast<float>(T(h)));
  }
}

template <typename T>
void run_rows(const Tensor& x, const Tensor& w, const Tensor& out, float eps, bool in_float) {
  const int64_t d = x.size(-1), rows = d == 0 ? 0 : x.numel() / d;
  for (int64_t r = 0; r < rows; ++r) {
    if (in_float)
      row<T, float>(x.data<T>() + r * d, w.data<float>(), out.data<T>() + r * d, d, eps);
    else
      row<T, T>(x.data<T>() + r * d, w.data<T>(), out.data<T>() + r * d, d, eps);
  }
}

// weight_offset's float32 weight: weight.to(float32) + offset, each element as the chain's cast
// and add compute it (the offset rounded to float, as add rounds a Python number).
Tensor offset_weight(const Tensor& w, double offset) {
  Tensor f = Tensor::empty(w.shape(), DType::kFloat32);
  copy_cast(f, w);
  return kAdd({Value::from_tensor(f), Value::floating(offset)});
}

void run(const Args& a, const std::vector<Tensor>& out, const KernelContext& ctx) {
  const Tensor& x = a[0].tensor;
  const bool in_float = a.size() > 3 && a[3].as_bool("upcast_rms_norm");
  const double offset = nn::norm_weight_offset(a, nn::kUpcastNormOffsetArg);
  if (a.size() > nn::kUpcastNormResidualArg &&
      a[nn::kUpcastNormResidualArg]
          .is_tensor()) {  // residual + the norm, by the chain's add kernel
    const Tensor h = Tensor::empty(x.shape(), x.dtype());
    run({a[0], a[1], a[2], a[3], Value::floating(offset)}, {h}, ctx);
    kAdd.into({a[nn::kUpcastNormResidualArg], Value::from_tensor(h)}, out[0]);
    return;
  }
  if (offset != 0) {
    Args b = {a[0], Value::from_tensor(offset_weight(a[1].tensor, offset)), a[2],
              Value::boolean(true)};
    return run(b, out, ctx);
  }
  const Value& w = a[1];
  const bool rows = x.dim() >= 1 && x.size(-1) > 0 && x.is_contiguous() && out[0].is_contiguous() &&
                    w.is_tensor() && w.tensor.is_contiguous() && !x.may_overlap(out[0]) &&
                    !w.tensor.may_overlap(out[0]) &&
                    (x.dtype() == DType::kBFloat16 || x.dtype() == DType::kFloat16);
  if (!rows) return run_chain(a, out[0], in_float);
  const float eps = static_cast<float>(a[2].as_double("upcast_rms_norm"));
  if (x.dtype() == DType::kBFloat16)
    run_rows<BFloat16>(x, w.tensor, out[0], eps, in_float);
  else
    run_rows<Half>(x, w.tensor, out[0], eps, in_float);
}

}  // namespace

void register_upcast_rms_norm_kernels(KernelTable& table) {
  table.add(DeviceType::kCpu, "upcast_rms_norm", run);
}

}  // namespace inplace::cpu
