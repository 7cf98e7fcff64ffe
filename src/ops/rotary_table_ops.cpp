// rotary_table(inv_freq, positions, sine, dtype): the cos (sine false) or sin table of a rotary
// embedding at the given positions, as Hugging Face's rotary embedding module computes it
//   freqs = (inv_freq[None, :, None].float() @ position_ids[:, None, :].float()).transpose(1, 2)
//   emb = cat(freqs, freqs, -1); cos = emb.cos() * attention_scaling; cos.to(dtype)
// (attention_scaling 1.0), what the fuse_rotary_table pass rewrites that chain into: one step
// instead of a product, a cat and one chain each for cos and sin. Element [b, s, j] of the
// result (j < 2h) is, in float32 with the chain's roundings:
//   f = inv_freq[b, j mod h, 0] * float(positions[b, 0, s]) + 0     (the matmul's one-term sum)
//   out = dtype(cos(f))   or   dtype(sin(f))
// positions of an integer dtype are converted to float32 as the chain's cast converts them; each
// backend's kernel uses the cos, sin, multiply and add of its own unfused kernels, so the step is
// bitwise the chain on that backend. inv_freq [B1, h, 1] is float32, positions [B2, 1, S]; B1 and
// B2 are 1 or one batch B (broadcast), the result [B, S, 2h].
#include "core/error.h"
#include "ops/registry.h"
#include "ops/rotary_table_args.h"

namespace inplace {

namespace rotary_table {

namespace {
constexpr const char* kOp = "rotary_table";
}  // namespace

bool takes_positions(DType t) {
  return t == DType::kFloat32 || t == DType::kInt64 || t == DType::kInt32 || t == DType::kInt16 ||
         t == DType::kInt8 || t == DType::kUInt8;
}

bool takes_result(DType t) {
  return t == DType::kFloat32 || t == DType::kBFloat16 || t == DType::kFloat16;
}

Tensor result_meta(const Args& a) {
  const Tensor& f = a[kInvFreq].as_tensor(kOp);
  const Tensor& p = a[kPositions].as_tensor(kOp);
  IP_CHECK(f.dtype() == DType::kFloat32 && f.dim() == 3 && f.size(2) == 1, kShapeMismatch, "[", kOp,
           "] inv_freq must be float32 [B, h, 1], got ", dtype_name(f.dtype()), " ",
           shape_str(f.shape()));
  IP_CHECK(takes_positions(p.dtype()) && p.dim() == 3 && p.size(1) == 1, kShapeMismatch, "[", kOp,
           "] positions must be float32 or integer [B, 1, S], got ", dtype_name(p.dtype()), " ",
           shape_str(p.shape()));
  const int64_t b1 = f.size(0), b2 = p.size(0);
  IP_CHECK(b1 == b2 || b1 == 1 || b2 == 1, kShapeMismatch, "[", kOp, "] inv_freq's batch ", b1,
           " and positions' batch ", b2, " do not broadcast");
  const DType t = a[kDtype].is_none() ? DType::kFloat32 : a[kDtype].as_dtype(kOp);
  IP_CHECK(takes_result(t), kDTypeMismatch, "[", kOp,
           "] the result must be float32, bfloat16 or float16, got ", dtype_name(t));
  (void)a[kSine].as_bool(kOp);
  return Tensor::meta({b1 == 1 ? b2 : b1, p.size(2), 2 * f.size(1)}, t);
}

}  // namespace rotary_table

void register_rotary_table_ops(Registry& r) {
  r.add_out(
      "rotary_table(Tensor inv_freq, Tensor positions, bool sine, ScalarType? dtype=None) "
      "-> Tensor",
      [](const Args& a) { return std::vector<Tensor>{rotary_table::result_meta(a)}; }, nullptr);
}

}  // namespace inplace
