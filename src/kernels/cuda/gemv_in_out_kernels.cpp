// The CUDA kernel of fused_addmm (ops/fused_addmm_args.h): the product over the [in, out]
// weight as it lies, with its bias, residual and LayerNorm prologue, in one launch
// (gemv_in_out.h). supports() asks for contiguous operands of one float dtype.
#include "kernels/cuda/gemv_in_out.h"
#include "kernels/cuda/registration.h"
#include "ops/fused_addmm_args.h"

namespace inplace::cuda {

namespace {

using namespace fused_addmm;

bool contiguous_or_none(const Args& a, size_t pos) {
  return !has_arg(a, pos) || a[pos].tensor.is_contiguous();
}

std::string supports(const Args& a) {
  const DType t = a[kInput].tensor.dtype();
  if (t != DType::kFloat32 && t != DType::kBFloat16 && t != DType::kFloat16)
    return "an input that is not float32, bfloat16 or float16";
  for (size_t pos : {kInput, kWeight, kBias, kResidual, kNormWeight, kNormBias})
    if (!contiguous_or_none(a, pos)) return "an operand that is not contiguous";
  return "";
}

void run(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  meta(a);
  const std::string why = supports(a);
  IP_CHECK(why.empty(), kUnsupported, "[cuda] ", kName, ": ", why);
  const Tensor& x = a[kInput].tensor;
  const Tensor& w = a[kWeight].tensor;
  const Tensor& y = outs[0];
  IP_CHECK(y.is_contiguous(), kUnsupported, "[cuda] ", kName, ": a result that is not contiguous");
  GemvInOut g;
  g.dtype = x.dtype();
  g.k = w.size(0);
  g.n = w.size(1);
  g.rows = g.k ? x.numel() / g.k : 0;
  g.x_stride = g.k;
  g.y_stride = g.n;
  g.residual_stride = g.n;
  if (g.k == 0) {  // no product: y = bias (+ residual) through the zero-length sum
    g.rows = 1;
    for (int64_t d = 0; d + 1 < x.dim(); ++d) g.rows *= x.size(d);
  }
  if (g.rows == 0 || g.n == 0) return;
  g.x = x.data_ptr();
  g.w = w.data_ptr();
  g.y = y.data_ptr();
  if (has_arg(a, kBias)) g.bias = a[kBias].tensor.data_ptr();
  if (has_arg(a, kResidual)) g.residual = a[kResidual].tensor.data_ptr();
  if (has_arg(a, kEps)) {
    g.norm = true;
    g.eps = a[kEps].as_double(kName);
    if (has_arg(a, kNormWeight)) g.norm_w = a[kNormWeight].tensor.data_ptr();
    if (has_arg(a, kNormBias)) g.norm_b = a[kNormBias].tensor.data_ptr();
  }
  gemv_in_out(g, ctx.queue);
}

}  // namespace

void register_fused_addmm_kernels(KernelTable& table) {
  table.add(DeviceType::kCuda, kName, run, supports);
}

}  // namespace inplace::cuda
