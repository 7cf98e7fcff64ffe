// The CUDA kernel of fused_addmm (ops/fused_addmm_args.h): the product over the [in, out]
// weight as it lies, with its bias, residual, LayerNorm prologue and epilogue program, in one
// launch (gemv_in_out.h), at one row with the k and v cache writes of its slices too (the
// engine's epilogue writes). supports() asks for contiguous operands of one float dtype and an
// epilogue the fused_pointwise kernel runs.
#include "kernels/cuda/fused_pointwise.h"
#include "kernels/cuda/gemv_in_out.h"
#include "kernels/cuda/launch_groups.h"
#include "kernels/cuda/registration.h"
#include "kernels/cuda/row_write.h"
#include "ops/fused_addmm_args.h"

namespace inplace::cuda {

namespace {

using namespace fused_addmm;

bool contiguous_or_none(const Args& a, size_t pos) {
  return !has_arg(a, pos) || a[pos].tensor.is_contiguous();
}

// The epilogue program over the product's value (a tensor of the result's shape and dtype).
pointwise::Program epilogue_of(const Args& a, std::vector<Tensor>* inputs) {
  const Tensor& x = a[kInput].tensor;
  Shape out(x.shape().begin(), x.shape().end() - 1);
  out.push_back(a[kWeight].tensor.size(1));
  inputs->push_back(Tensor::meta(out, x.dtype()));
  return pointwise::decode(a[kEpilogue].as_int_list(kName), {x.dtype()});
}

std::string supports(const Args& a) {
  const DType t = a[kInput].tensor.dtype();
  if (t != DType::kFloat32 && t != DType::kBFloat16 && t != DType::kFloat16)
    return "an input that is not float32, bfloat16 or float16";
  for (size_t pos : {kInput, kWeight, kBias, kResidual, kNormWeight, kNormBias})
    if (!contiguous_or_none(a, pos)) return "an operand that is not contiguous";
  if (has_epilogue(a)) {
    std::vector<Tensor> inputs;
    try {
      return fused_pointwise_refusal(epilogue_of(a, &inputs), inputs);
    } catch (const Error& e) {
      return std::string(e.what());
    }
  }
  return "";
}

// The launch's operands (no pointers where there is nothing to compute: rows or n of 0).
GemvInOut operands(const Args& a, const std::vector<Tensor>& outs) {
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
  g.rows = 1;  // x's leading dims (k may be 0: y = bias (+ residual), a sum of no terms)
  for (int64_t d = 0; d + 1 < x.dim(); ++d) g.rows *= x.size(d);
  g.x_stride = g.k;
  g.y_stride = g.n;
  g.residual_stride = g.n;
  if (g.rows == 0 || g.n == 0) return g;
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
  if (has_epilogue(a)) {
    std::vector<Tensor> inputs;
    const pointwise::Program p = epilogue_of(a, &inputs);
    g.epilogue.n_code = static_cast<int>(p.code.size());
    for (int k = 0; k < g.epilogue.n_code; ++k) {
      g.epilogue.code[k] = p.code[k];
      g.epilogue.reg[k] = static_cast<uint8_t>(p.reg[k]);
    }
  }
  return g;
}

void run(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  gemv_in_out(operands(a, outs), ctx.queue);
}

static_assert(kMaxEpilogueWrites <= 2, "GemvInOut holds the writes of one group");

// A one-row product and the k and v cache writes of its slices (the engine's epilogue writes:
// GPT-2's c_attn) in one launch; false, having launched nothing, for another form.
bool run_with_writes(const StepCall& p, const StepCall* writes, int n) {
  if (n > kMaxEpilogueWrites || !supports(*p.args).empty()) return false;
  GemvInOut g = operands(*p.args, *p.outs);
  if (g.rows != 1 || g.n == 0) return false;
  for (int k = 0; k < n; ++k)
    if (!row_write_of(writes[k], g.y, g.n, g.dtype, &g.writes[g.n_writes++])) return false;
  gemv_in_out(g, p.ctx.queue);
  return true;
}

}  // namespace

void register_fused_addmm_kernels(KernelTable& table) {
  table.add(DeviceType::kCuda, kName, run, supports);
  LaunchKernels::get().add_epilogue_writes(kName, "kv_cache_update", run_with_writes);
}

}  // namespace inplace::cuda
