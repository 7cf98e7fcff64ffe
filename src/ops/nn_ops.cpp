// nn ops: layer_norm (+ native_layer_norm), rms_norm, upcast_rms_norm,
// scaled_dot_product_attention, rounded_attention, dropout (eval mode only: inplace runs
// inference). Their arguments are decoded by ops/nn_args.h, which the kernels read too.
#include <string>

#include "ops/nn_args.h"
#include "ops/registry.h"

namespace inplace {

namespace {

using namespace nn;

// ---------------------------------------------------------------- norms

// mean and rstd keep the normalised dims as size 1, as torch returns them.
Shape stat_shape(const Tensor& x, int64_t axis) {
  Shape s = x.shape();
  for (int64_t d = axis; d < x.dim(); ++d) s[d] = 1;
  return s;
}

void register_norms(Registry& r) {
  r.add_out(
      "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
      "Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor",
      [](const Args& a) {
        const Tensor& x = a[0].as_tensor("layer_norm");
        check_norm("layer_norm", x, a[1].as_int_list("layer_norm"), a[2], a[3]);
        return std::vector<Tensor>{Tensor::meta(x.shape(), x.dtype())};
      },
      nullptr);
  r.add_out(
      "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, "
      "float eps) -> (Tensor, Tensor, Tensor)",
      [](const Args& a) {
        const Tensor& x = a[0].as_tensor("native_layer_norm");
        int64_t axis =
            check_norm("native_layer_norm", x, a[1].as_int_list("native_layer_norm"), a[2], a[3]);
        const Shape s = stat_shape(x, axis);
        return std::vector<Tensor>{Tensor::meta(x.shape(), x.dtype()), Tensor::meta(s, x.dtype()),
                                   Tensor::meta(s, x.dtype())};
      },
      nullptr);
  r.add_out(
      "rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) "
      "-> Tensor",
      [](const Args& a) {
        const Tensor& x = a[0].as_tensor("rms_norm");
        check_norm("rms_norm", x, a[1].as_int_list("rms_norm"), a[2], Value::none());
        return std::vector<Tensor>{Tensor::meta(x.shape(), x.dtype())};
      },
      nullptr);
  // Hugging Face's RMSNorm at a half dtype dt (LlamaRMSNorm, GemmaRMSNorm; made by fuse_rms_norm):
  //   h = x.to(float32) * rsqrt(x.to(float32).pow(2).mean(-1, keepdim=True) + eps)
  //   weight_in_float=False: weight * h.to(dt)               (weight of dt)
  //   weight_in_float=True:  (weight * h).to(dt)             (weight float32: Gemma's 1 + w)
  //   weight_offset=o != 0:  (h * (weight.to(float32) + o)).to(dt)  (Gemma's 1 + w of its own
  //                          weight, w of dt or float32: the add in float32, as the chain's)
  //   residual=r:            r + that, as add(r, norm) at dt computes it (Gemma 3's norms after
  //                          attention and after the MLP, then the residual add)
  // Every backend computes each element by the chain's float32 operations, rounding only where
  // the chain does (h to dt, then the product to dt; the product alone for weight_in_float).
  r.add_out(
      "upcast_rms_norm(Tensor input, Tensor weight, float eps, bool weight_in_float=False, "
      "float weight_offset=0.0, Tensor? residual=None) -> Tensor",
      [](const Args& a) {
        const char* op = "upcast_rms_norm";
        const Tensor& x = a[0].as_tensor(op);
        IP_CHECK(x.dtype() == DType::kBFloat16 || x.dtype() == DType::kFloat16 ||
                     x.dtype() == DType::kFloat32,
                 kDTypeMismatch, "[", op, "] input must be bfloat16, float16 or float32, got ",
                 dtype_name(x.dtype()));
        nn::check_upcast_norm_weight(op, x, a, 1, 3, nn::kUpcastNormOffsetArg);
        if (a.size() > nn::kUpcastNormResidualArg && !a[nn::kUpcastNormResidualArg].is_none()) {
          const Tensor& r = a[nn::kUpcastNormResidualArg].as_tensor(op);
          IP_CHECK(r.shape() == x.shape() && r.dtype() == x.dtype(), kShapeMismatch, "[", op,
                   "] residual ", dtype_name(r.dtype()), " ", shape_str(r.shape()),
                   " must be the input's dtype and shape, ", dtype_name(x.dtype()), " ",
                   shape_str(x.shape()));
        }
        return std::vector<Tensor>{Tensor::meta(x.shape(), x.dtype())};
      },
      nullptr);
  r.tag({"upcast_rms_norm"}, kJoinsNext);
  // The fused form also returns rstd, kept-dim shaped, in the compute dtype.
  r.add_out(
      "_fused_rms_norm(Tensor input, int[] normalized_shape, Tensor? weight, float? eps) -> "
      "(Tensor, Tensor)",
      [](const Args& a) {
        const char* op = "_fused_rms_norm";
        const Tensor& x = a[0].as_tensor(op);
        int64_t axis = check_norm(op, x, a[1].as_int_list(op), a[2], Value::none());
        const DType acc = x.dtype() == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
        return std::vector<Tensor>{Tensor::meta(x.shape(), x.dtype()),
                                   Tensor::meta(stat_shape(x, axis), acc)};
      },
      nullptr);
}

// ---------------------------------------------------------------- attention

void register_attention(Registry& r) {
  r.add_out(
      "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
      "Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, "
      "bool enable_gqa=False, int window=0) -> Tensor",
      [](const Args& a) {
        SdpaPlan p = plan_sdpa(a);
        sdpa_window(a);
        return std::vector<Tensor>{Tensor::meta(p.out_shape, p.q.dtype())};
      },
      nullptr);
  // Attention written out op by op at a half dtype (recognize_attention; Hugging Face's eager
  // attention in bf16 or fp16), keeping the chain's roundings: scores = q @ k^T rounded to the
  // dtype, then `* scale` (or `/ scale` with divide; no scaling when scale is None) rounded,
  // masked to -inf where attn_mask is false, softmax rounded, then @ v rounded. Every backend
  // computes it as those ops' own kernels do, so it is bitwise the chain; over a prefix of the
  // keys (attend_filled_prefix) it is bitwise the chain over the whole masked cache where the
  // backend's softmax adds a masked key's exp(-inf) = 0 without reordering the others.
  r.add_out(
      "rounded_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
      "float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False, "
      "bool divide=False) -> Tensor",
      [](const Args& a) {
        SdpaPlan p = plan_sdpa(a);
        IP_CHECK(p.q.dtype() == DType::kBFloat16 || p.q.dtype() == DType::kFloat16, kDTypeMismatch,
                 "[rounded_attention] operands must be bfloat16 or float16, got ",
                 dtype_name(p.q.dtype()));
        IP_CHECK(!p.causal, kInvalidArgument, "[rounded_attention] is_causal must be False");
        return std::vector<Tensor>{Tensor::meta(p.out_shape, p.q.dtype())};
      },
      nullptr);
  // What torch.export / make_fx record for CPU attention: 4-D operands, plus the per-row
  // log-sum-exp of the scores (in the compute dtype).
  r.add_out(
      "_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, "
      "float dropout_p=0.0, bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None) "
      "-> (Tensor output, Tensor logsumexp)",
      [](const Args& a) {
        SdpaPlan p = plan_sdpa_flash(a);
        Shape s(p.out_shape.begin(), p.out_shape.end() - 1);
        const DType acc = p.q.dtype() == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
        return std::vector<Tensor>{Tensor::meta(p.out_shape, p.q.dtype()), Tensor::meta(s, acc)};
      },
      nullptr);
}

// ---------------------------------------------------------------- dropout

InferFn same_as_input(const char* op) {
  return [op](const Args& a) {
    const Tensor& x = a[0].as_tensor(op);
    check_dropout(op, a[1].as_double(op), a[2].as_bool(op));
    return std::vector<Tensor>{Tensor::meta(x.shape(), x.dtype())};
  };
}

void register_dropout(Registry& r) {
  // aten form (input, p, train), then torch.nn.functional's (input, p=0.5, training=True,
  // inplace=False): FX records the latter with keyword names.
  for (const char* name : {"dropout", "alpha_dropout", "feature_alpha_dropout", "feature_dropout"})
    r.add_out(std::string(name) + "(Tensor input, float p, bool train) -> Tensor",
              same_as_input(name), nullptr);
  for (const char* name :
       {"dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d"})
    r.add_out(std::string(name) +
                  ".functional(Tensor input, float p=0.5, bool training=True, bool inplace=False) "
                  "-> Tensor",
              same_as_input(name), nullptr);
  r.add_inplace("dropout_(Tensor(a!) self, float p, bool train) -> Tensor(a!)", "dropout");
  r.add_out(
      "native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)",
      [](const Args& a) {
        const Tensor& x = a[0].as_tensor("native_dropout");
        // train=None means training, as in ATen.
        check_dropout("native_dropout", a[1].as_double("native_dropout"),
                      a[2].is_none() || a[2].as_bool("native_dropout"));
        return std::vector<Tensor>{Tensor::meta(x.shape(), x.dtype()),
                                   Tensor::meta(x.shape(), DType::kBool)};
      },
      nullptr);
}

}  // namespace

void register_nn_ops(Registry& r) {
  register_norms(r);
  register_attention(r);
  register_dropout(r);
}

}  // namespace inplace
