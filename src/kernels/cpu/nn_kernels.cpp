// The cpu kernels of the nn ops, registered into the kernel table: layer_norm,
// native_layer_norm, rms_norm, _fused_rms_norm, scaled_dot_product_attention (and the flash form
// make_fx records) and the dropouts (eval mode: a copy). Arguments are decoded by
// ops/nn_args.h, which the declarations and the CUDA kernels read too.
#include "kernels/cpu/nn.h"
#include "kernels/cpu/registration.h"
#include "ops/nn_args.h"

namespace inplace::cpu {

namespace {

using namespace nn;

constexpr DeviceType kCpu = DeviceType::kCpu;

void register_norms(KernelTable& t) {
  t.add(kCpu, "layer_norm",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          const Tensor& x = a[0].as_tensor("layer_norm");
          int64_t axis = check_norm("layer_norm", x, a[1].as_int_list("layer_norm"), a[2], a[3]);
          layer_norm(x, axis, opt_tensor(a[2], "layer_norm"), opt_tensor(a[3], "layer_norm"),
                     a[4].as_double("layer_norm"), out[0], Tensor(), Tensor());
        });
  t.add(kCpu, "native_layer_norm",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          const char* op = "native_layer_norm";
          const Tensor& x = a[0].as_tensor(op);
          int64_t axis = check_norm(op, x, a[1].as_int_list(op), a[2], a[3]);
          layer_norm(x, axis, opt_tensor(a[2], op), opt_tensor(a[3], op), a[4].as_double(op),
                     out[0], out[1], out[2]);
        });
  t.add(kCpu, "rms_norm", [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    const Tensor& x = a[0].as_tensor("rms_norm");
    int64_t axis = check_norm("rms_norm", x, a[1].as_int_list("rms_norm"), a[2], Value::none());
    rms_norm(x, axis, opt_tensor(a[2], "rms_norm"), rms_eps(x, a[3]), out[0]);
  });
  t.add(kCpu, "_fused_rms_norm",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          const char* op = "_fused_rms_norm";
          const Tensor& x = a[0].as_tensor(op);
          int64_t axis = check_norm(op, x, a[1].as_int_list(op), a[2], Value::none());
          rms_norm(x, axis, opt_tensor(a[2], op), rms_eps(x, a[3]), out[0], out[1]);
        });
}

void register_attention(KernelTable& t) {
  t.add(kCpu, kSdpa, [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    SdpaPlan p = plan_sdpa(a);
    const int64_t window = sdpa_window(a);  // the last `window` keys only
    scaled_dot_product_attention(p.q, window_keys(p.k, window), window_keys(p.v, window), p.mask,
                                 p.scale, p.causal, out[0].view(p.grouped_shape));
  });
  t.add(kCpu, "_scaled_dot_product_flash_attention_for_cpu",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          SdpaPlan p = plan_sdpa_flash(a);
          scaled_dot_product_attention(p.q, p.k, p.v, p.mask, p.scale, p.causal, out[0], out[1]);
        });
}

Kernel identity_copy(const char* op) {
  return [op](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    check_dropout(op, a[1].as_double(op), a[2].as_bool(op));
    out[0].copy_from(a[0].tensor);
  };
}

void register_dropout(KernelTable& t) {
  // Every overload of each name: the aten form and the torch.nn.functional one.
  for (const char* name : {"dropout", "alpha_dropout", "feature_alpha_dropout", "feature_dropout",
                           "dropout1d", "dropout2d", "dropout3d"})
    t.add(kCpu, name, identity_copy(name));
  t.add(kCpu, "native_dropout",
        [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
          check_dropout("native_dropout", a[1].as_double("native_dropout"),
                        a[2].is_none() || a[2].as_bool("native_dropout"));
          out[0].copy_from(a[0].tensor);
          out[1].fill(Scalar(true));
        });
}

}  // namespace

void register_nn_kernels(KernelTable& t) {
  register_norms(t);
  register_attention(t);
  register_dropout(t);
}

}  // namespace inplace::cpu
