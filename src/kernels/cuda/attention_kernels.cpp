// The CUDA kernel of scaled_dot_product_attention (attention.cu): operands up to 4-D, batch
// dims broadcast, grouped kv heads (enable_gqa, or a kv head dim of 1) read in place, never
// repeated. The key count is the key tensor's own: for a cache view k[:, :, :pos+1] only the
// filled prefix is read.
#include <cmath>

#include "kernels/cuda/call_data.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/registration.h"
#include "ops/nn_args.h"

namespace inplace::cuda {

namespace {

Tensor as_4d(const Tensor& t) {
  Tensor r = t;
  while (r.dim() < 4) r = r.unsqueeze(0);
  IP_CHECK(r.dim() == 4, kUnsupported,
           "[cuda] scaled_dot_product_attention takes operands of at most 4 dims on cuda, got ",
           shape_str(t.shape()));
  return r;
}

void sdpa(const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
  const Tensor q = as_4d(a[0].tensor), k = as_4d(a[1].tensor), v = as_4d(a[2].tensor);
  const Tensor out = as_4d(outs[0]);
  const int64_t B = out.size(0), H = out.size(1), L = out.size(2), S = k.size(2);
  const int64_t Hk = k.size(1) == 1 ? 1 : k.size(1);
  IP_CHECK(H % Hk == 0, kShapeMismatch, "[cuda] scaled_dot_product_attention: ", H,
           " query heads are not a multiple of ", Hk, " key heads");
  Attention t;
  t.q = operand(q, {B, H, L, q.size(3)});
  t.k = operand(k, {B, Hk, S, k.size(3)});
  t.v = operand(v, {B, Hk, S, v.size(3)});
  t.out = operand(out);
  t.has_mask = a[3].is_tensor();
  if (t.has_mask) t.mask = operand(a[3].tensor, {B, H, L, S});
  t.causal = a[5].as_bool("scaled_dot_product_attention");
  t.scale = nn::sdpa_scale(a[6], q.size(3));
  t.kv_len = key_count(ctx);  // the key count of this call, when it is read on the device
  t.window = nn::sdpa_window(a);
  // The general path's split partials: the context's own scratch.
  if (const size_t bytes = attention_workspace_bytes(t); bytes > 0 && workspace(ctx))
    t.scratch = static_cast<float*>(workspace(ctx)->get(kWorkspaceAttention, bytes));
  attention(t, ctx.queue);
}

// The kernels compute in float32 (their scores, softmax and sums): float64 attention would lose
// its precision, so the compiler places it on the host.
std::string sdpa_supports(const Args& a) {
  for (int i = 0; i < 3; ++i)
    if (a[i].is_tensor() && a[i].tensor.dtype() == DType::kFloat64)
      return "float64 attention is computed on the host (the cuda kernels sum in float32)";
  return {};
}

}  // namespace

void register_attention_kernels(KernelTable& table) {
  table.add(DeviceType::kCuda, "scaled_dot_product_attention", sdpa, sdpa_supports);
}

}  // namespace inplace::cuda
