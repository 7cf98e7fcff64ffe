// The epilogue product of scaled_dot_product_attention (attention_product.cu): a decoder layer's
// attention and the o_proj that reads its result through views (linear_bf16_weight, or
// linear_bf16_weight_add with the residual) as one launch. Taken when the attention is the
// decode form with one query row a head and the product's input is exactly that row's memory;
// any other form runs the two steps one by one.
#include "kernels/cuda/launch.h"
#include "kernels/cuda/registration.h"

namespace inplace::cuda {

namespace {

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// A float32 operand of n elements at unit stride (a row of n), or none.
bool row_of(const Value& v, int64_t n) {
  if (!v.is_tensor()) return v.is_none();
  const Tensor& t = v.tensor;
  return t.dtype() == DType::kFloat32 && t.numel() == n && (n == 1 || t.stride(-1) == 1);
}

bool run(const StepCall& step, const StepCall& product) {
  const KernelContext& ctx = step.ctx;
  if (!ctx.workspace) return false;
  const Tensor& out = (*step.outs)[0];
  const Args& pa = *product.args;
  const Tensor &x = pa[0].tensor, &w = pa[1].tensor, &y = (*product.outs)[0];
  const Attention a = attention_operands(*step.args, out, ctx);
  const int64_t n = w.dim() == 2 ? w.size(0) : 0;
  if (!attention_product_supports(a, n).empty()) return false;
  // The product's input is the attention result's memory as one row of H * E.
  const int64_t cols = a.q.size[1] * a.q.size[3];
  if (x.dtype() != DType::kFloat32 || x.data_ptr() != out.data_ptr() || x.numel() != cols ||
      !x.is_contiguous())
    return false;
  if (w.dtype() != DType::kBFloat16 || w.size(1) != cols || !w.is_contiguous() ||
      !aligned16(w.data_ptr()))
    return false;
  if (y.dtype() != DType::kFloat32 || y.numel() != n || !y.is_contiguous()) return false;
  const bool add = pa.size() > 3;
  if (!row_of(pa[2], n) || (add && !row_of(pa[3], n))) return false;
  AttentionProduct p;
  p.a = a;
  p.w = w.data_ptr();
  if (pa[2].is_tensor()) p.bias = static_cast<const float*>(pa[2].tensor.data_ptr());
  if (add) p.residual = static_cast<const float*>(pa[3].tensor.data_ptr());
  p.y = static_cast<float*>(y.data_ptr());
  p.n = n;
  // The slot is sized by the first attention it serves; a larger one later runs unfused.
  const size_t bytes = attention_product_workspace_bytes(a, n);
  const size_t have = ctx.workspace->size(kWorkspaceProduct);
  if (have > 0 && have < bytes) return false;
  p.workspace = ctx.workspace->get(kWorkspaceProduct, bytes);
  return attention_product(p, ctx.stream);
}

}  // namespace

void register_attention_product_kernels(KernelTable& table) {
  for (const char* product : {"linear_bf16_weight", "linear_bf16_weight_add"})
    table.add_epilogue_product(DeviceType::kCuda, "scaled_dot_product_attention", product, run);
}

}  // namespace inplace::cuda
