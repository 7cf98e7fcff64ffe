// linear_bf16_weight: x @ w^T (+ bias) with a bfloat16 weight and float32 input, output and
// accumulation: `linear(x, w.to(float32))` without materialising the float32 weight, so a step
// reads the weight's bf16 bytes once. The fuse_weight_casts pass rewrites that pattern into it.
#include <algorithm>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/matrix.h"
#include "ops/registry.h"

namespace inplace {

namespace {

constexpr const char* kOp = "linear_bf16_weight";
// Up to this many rows of x the GEMV in passes of kGemvMaxRows rows beats widening the weight
// to float32 and calling sgemm (small bf16, one thread, prompts of 32-256 tokens: 32 vs 55 ms,
// 147 vs 175 ms); it also needs no float32 copy of the weight.
constexpr int64_t kGemvPromptRows = 256;

Tensor check(const Args& a) {
  const Tensor& x = a[0].as_tensor(kOp);
  const Tensor& w = a[1].as_tensor(kOp);
  IP_CHECK(x.dtype() == DType::kFloat32 && w.dtype() == DType::kBFloat16, kDTypeMismatch, "[", kOp,
           "] expected a float32 input and a bfloat16 weight, got ", dtype_name(x.dtype()), " and ",
           dtype_name(w.dtype()));
  IP_CHECK(x.dim() >= 1 && w.dim() == 2 && x.size(-1) == w.size(1), kShapeMismatch, "[", kOp,
           "] input ", shape_str(x.shape()), " does not fit weight ", shape_str(w.shape()));
  Shape out(x.shape().begin(), x.shape().end() - 1);
  out.push_back(w.size(0));
  if (!a[2].is_none()) {
    const Tensor& b = a[2].as_tensor(kOp);
    IP_CHECK(b.dtype() == DType::kFloat32 && b.dim() == 1 && b.size(0) == w.size(0), kShapeMismatch,
             "[", kOp, "] bias ", shape_str(b.shape()), " does not fit weight ",
             shape_str(w.shape()));
  }
  return Tensor::meta(out, DType::kFloat32);
}

void run(const Args& a, const std::vector<Tensor>& out) {
  check(a);
  const Tensor& x = a[0].tensor;
  const Tensor& w = a[1].tensor;
  const Tensor& y = out[0];
  const int64_t k = w.size(1), n = w.size(0), rows = x.numel() / std::max<int64_t>(k, 1);
  const bool has_bias = !a[2].is_none();
  if (rows <= kGemvPromptRows && x.is_contiguous() && w.is_contiguous() && y.is_contiguous()) {
    // Decode, and prompts of up to kGemvPromptRows tokens: the GEMV, kGemvMaxRows rows of x per
    // pass over the bf16 weight.
    for (int64_t r0 = 0; r0 < rows; r0 += cpu::kGemvMaxRows)
      cpu::gemv_parallel(cpu::GemvArgs<BFloat16>{
          x.data<float>() + r0 * k, k, std::min(cpu::kGemvMaxRows, rows - r0), w.data<BFloat16>(),
          k, n, k, y.data<float>() + r0 * n, n, 1.0f, 0.0f});
  } else {  // a long prompt: widen the weight once per call and multiply
    cpu::matmul(x.reshape({rows, k}), w.to(DType::kFloat32).t(), y.view({rows, n}));
  }
  if (has_bias) {
    const float* b = a[2].tensor.contiguous().data<float>();
    float* yp = y.data<float>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j) yp[r * n + j] += b[j];
  }
}

}  // namespace

void register_linear_lowp_ops(Registry& r) {
  r.add_out(
      "linear_bf16_weight(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
      [](const Args& a) { return std::vector<Tensor>{check(a)}; }, run);
}

}  // namespace inplace
