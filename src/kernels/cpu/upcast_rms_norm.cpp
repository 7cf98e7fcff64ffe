// upcast_rms_norm's cpu kernel (Hugging Face's RMSNorm at a half dtype, ops/nn_ops.cpp): the
// chain it replaces, run by the chain's own kernels, so that every element is bitwise what the
// unfused steps compute: the float32 upcast, x^2, the mean over the last dim, + eps, rsqrt, the
// scaling, then the weight on the result rounded to the input's dtype (or in float32 with
// weight_in_float, rounded once at the end).
#include "kernels/cpu/chain.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/registration.h"

namespace inplace::cpu {

namespace {

const ChainOp kPow("pow.Tensor_Scalar"), kMean("mean.dim"), kAdd("add.Tensor"), kRsqrt("rsqrt"),
    kMul("mul.Tensor");

void run(const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
  const Tensor& x = a[0].tensor;
  const Value& w = a[1];
  const bool in_float = a.size() > 3 && a[3].as_bool("upcast_rms_norm");
  Tensor up = Tensor::empty(x.shape(), DType::kFloat32);
  copy_cast(up, x);
  const Value upv = Value::from_tensor(up);
  const Tensor var = kMean({Value::from_tensor(kPow({upv, Value::integer(2)})),
                            Value::int_list({-1}), Value::boolean(true)});
  const Tensor inv = kRsqrt({Value::from_tensor(kAdd({Value::from_tensor(var), a[2]}))});
  const Tensor h = kMul({upv, Value::from_tensor(inv)});
  if (in_float) {  // (h * w).to(dt)
    copy_cast(out[0], kMul({Value::from_tensor(h), w}));
    return;
  }
  Tensor rounded = Tensor::empty(x.shape(), x.dtype());  // w * h.to(dt)
  copy_cast(rounded, h);
  kMul.into({w, Value::from_tensor(rounded)}, out[0]);
}

}  // namespace

void register_upcast_rms_norm_kernels(KernelTable& table) {
  table.add(DeviceType::kCpu, "upcast_rms_norm", run);
}

}  // namespace inplace::cpu
