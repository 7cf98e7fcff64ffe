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
#include "kernels/cpu/upcast_rms_norm.h"

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

// One row of d elements: the chain's operations, element by element. The weight as the chain
// reads it: the dtype's weight times the rounded h; a float32 weight (`in_float`) times h in
// float, rounded once; a weight with an offset: float(w) + offset (the offset rounded to float,
// as add rounds a Python number), in float as the float weight. A residual is added as add.Tensor
// adds at the dtype: float(r) + float(y), rounded.
template <typename T, typename W>
void row(const T* x, const W* w, const T* r, T* y, int64_t d, const NormRows& n) {
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
  const float inv = 1.0f / std::sqrt(var + n.eps);
  const bool offset = n.offset != 0.0f;
  for (int64_t j = 0; j < d; ++j) {
    const float h = static_cast<float>(x[j]) * inv;
    T o;
    if (n.in_float || offset) {
      const float wf = offset ? static_cast<float>(w[j]) + n.offset : static_cast<float>(w[j]);
      o = T(h * wf);
    } else {
      o = T(static_cast<float>(w[j]) * static_cast<float>(T(h)));
    }
    y[j] = r ? T(static_cast<float>(r[j]) + static_cast<float>(o)) : o;
  }
}

template <typename T>
void run_rows(const Tensor& x, const Tensor& w, const Tensor* residual, const Tensor& out,
              const NormRows& n) {
  const int64_t d = x.size(-1), rows = d == 0 ? 0 : x.numel() / d;
  const T* r = residual ? residual->data<T>() : nullptr;
  for (int64_t i = 0; i < rows; ++i) {
    const T* ri = r ? r + i * d : nullptr;
    if (w.dtype() == DType::kFloat32)
      row<T, float>(x.data<T>() + i * d, w.data<float>(), ri, out.data<T>() + i * d, d, n);
    else
      row<T, T>(x.data<T>() + i * d, w.data<T>(), ri, out.data<T>() + i * d, d, n);
  }
}

// weight_offset's float32 weight: weight.to(float32) + offset, each element as the chain's cast
// and add compute it (the offset rounded to float, as add rounds a Python number).
Tensor offset_weight(const Tensor& w, double offset) {
  Tensor f = Tensor::empty(w.shape(), DType::kFloat32);
  copy_cast(f, w);
  return kAdd({Value::from_tensor(f), Value::floating(offset)});
}

// The operands run_rows reads: contiguous rows of a half dtype, a contiguous weight of the
// dtype or float32 (float32 only with in_float or an offset), a residual of x's shape and dtype
// (contiguous), none overlapping the result but a residual that is the result itself.
bool rows_apply(const Tensor& x, const Tensor& w, const Tensor* residual, const Tensor& out,
                const NormRows& n) {
  const bool half = x.dtype() == DType::kBFloat16 || x.dtype() == DType::kFloat16;
  const bool weight_ok =
      w.dtype() == x.dtype() || (w.dtype() == DType::kFloat32 && (n.in_float || n.offset != 0.0f));
  const bool residual_ok =
      !residual ||
      (residual->dtype() == x.dtype() && residual->shape() == x.shape() &&
       residual->is_contiguous() && (residual->same_view(out) || !residual->may_overlap(out)));
  return half && weight_ok && residual_ok && x.dim() >= 1 && x.size(-1) > 0 && w.dim() == 1 &&
         w.size(0) == x.size(-1) && x.is_contiguous() && out.is_contiguous() && w.is_contiguous() &&
         !x.may_overlap(out) && !w.may_overlap(out);
}

void run(const Args& a, const std::vector<Tensor>& out, const KernelContext& ctx) {
  const Tensor& x = a[0].tensor;
  const bool in_float = a.size() > 3 && a[3].as_bool("upcast_rms_norm");
  const double offset = nn::norm_weight_offset(a, nn::kUpcastNormOffsetArg);
  const Tensor* residual =
      a.size() > nn::kUpcastNormResidualArg && a[nn::kUpcastNormResidualArg].is_tensor()
          ? &a[nn::kUpcastNormResidualArg].tensor
          : nullptr;
  if (a[1].is_tensor() &&
      upcast_rms_norm_rows(x, a[1].tensor, residual, out[0],
                           {static_cast<float>(a[2].as_double("upcast_rms_norm")), in_float,
                            static_cast<float>(offset)}))
    return;
  if (residual) {  // residual + the norm, by the chain's add kernel
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
  run_chain(a, out[0], in_float);
}

}  // namespace

bool upcast_rms_norm_rows(const Tensor& x, const Tensor& w, const Tensor* residual,
                          const Tensor& out, const NormRows& n) {
  if (!rows_apply(x, w, residual, out, n)) return false;
  if (x.dtype() == DType::kBFloat16)
    run_rows<BFloat16>(x, w, residual, out, n);
  else
    run_rows<Half>(x, w, residual, out, n);
  return true;
}

void register_upcast_rms_norm_kernels(KernelTable& table) {
  table.add(DeviceType::kCpu, "upcast_rms_norm", run);
}

}  // namespace inplace::cpu
