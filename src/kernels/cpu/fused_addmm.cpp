// The cpu kernel of fused_addmm (ops/fused_addmm_args.h): the chain it replaces, run by the
// chain's own cpu kernels (chain.h), so the fused step is bitwise the unfused one at every dtype:
// layer_norm into a temporary when the op has its prologue, addmm (mm without a bias) over the
// weight as stored, [in, out], then the residual's add and the epilogue program (the
// fused_pointwise kernel, in place).
#include "core/error.h"
#include "kernels/cpu/chain.h"
#include "kernels/cpu/registration.h"
#include "ops/fused_addmm_args.h"

namespace inplace::cpu {

namespace {

using namespace fused_addmm;

const ChainOp kLayerNormOp("layer_norm"), kAddmmOp("addmm"), kMmOp("mm"), kAddOp("add.Tensor"),
    kPointwiseOp("fused_pointwise");

void run(const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
  meta(a);
  const Tensor x = has_arg(a, kEps) ? kLayerNormOp(layer_norm_args(a)) : a[kInput].tensor;
  const Tensor& y = out[0];
  const int64_t k = x.size(-1), n = y.size(-1);
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
  const Value x2 = Value::from_tensor(x.reshape({rows, k}));
  // The chain's addmm writes a fresh [rows, n] result: y itself when it is contiguous.
  const Tensor y2 = y.is_contiguous() ? y.view({rows, n}) : Tensor::empty({rows, n}, y.dtype());
  if (has_arg(a, kBias))
    kAddmmOp.into({a[kBias], x2, a[kWeight]}, y2);
  else
    kMmOp.into({x2, a[kWeight]}, y2);
  if (y2.data_ptr() != y.data_ptr()) y.copy_from(y2.view(y.shape()));
  if (has_arg(a, kResidual)) kAddOp.into({Value::from_tensor(y), a[kResidual]}, y);
  if (has_epilogue(a)) kPointwiseOp.into({Value::list({Value::from_tensor(y)}), a[kEpilogue]}, y);
}

}  // namespace

void register_fused_addmm_kernels(KernelTable& table) {
  table.add(DeviceType::kCpu, kName, run);
}

}  // namespace inplace::cpu
