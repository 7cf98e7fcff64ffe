// nn ops: layer_norm (+ native_layer_norm), rms_norm, scaled_dot_product_attention, dropout
// (eval mode only: inplace runs inference).
#include <cmath>
#include <limits>

#include "kernels/cpu/nn.h"
#include "ops/registry.h"

namespace inplace {

namespace {

// ---------------------------------------------------------------- norms

// Checks input / normalized_shape / weight / bias; returns the first normalised dim.
int64_t check_norm(const char* op, const Tensor& x, const Shape& normalized, const Value& weight,
                   const Value& bias) {
  IP_CHECK(is_floating(x.dtype()), kDTypeMismatch, "[", op,
           "] expected a floating point input, got ", dtype_name(x.dtype()));
  IP_CHECK(!normalized.empty(), kInvalidArgument, "[", op,
           "] normalized_shape must name at least one dim, got []");
  const int64_t nd = static_cast<int64_t>(normalized.size());
  const bool fits = x.dim() >= nd && Shape(x.shape().end() - nd, x.shape().end()) == normalized;
  IP_CHECK(fits, kShapeMismatch, "[", op, "] normalized_shape ", shape_str(normalized),
           " does not match the trailing dims of input ", shape_str(x.shape()));
  for (const auto& [name, v] :
       {std::pair<const char*, const Value*>{"weight", &weight}, {"bias", &bias}}) {
    if (v->is_none()) continue;
    const Tensor& p = v->as_tensor(op);
    IP_CHECK(p.shape() == normalized, kShapeMismatch, "[", op, "] ", name, " ",
             shape_str(p.shape()), " does not match normalized_shape ", shape_str(normalized),
             " (input ", shape_str(x.shape()), ")");
  }
  return x.dim() - nd;
}

Tensor opt_tensor(const Value& v, const char* op) {
  return v.is_none() ? Tensor() : v.as_tensor(op);
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
      [](const Args& a, const std::vector<Tensor>& out) {
        const Tensor& x = a[0].as_tensor("layer_norm");
        int64_t axis = check_norm("layer_norm", x, a[1].as_int_list("layer_norm"), a[2], a[3]);
        cpu::layer_norm(x, axis, opt_tensor(a[2], "layer_norm"), opt_tensor(a[3], "layer_norm"),
                        a[4].as_double("layer_norm"), out[0], Tensor(), Tensor());
      });
  // mean and rstd keep the normalised dims as size 1, as torch returns them.
  auto stat_shape = [](const Tensor& x, int64_t axis) {
    Shape s = x.shape();
    for (int64_t d = axis; d < x.dim(); ++d) s[d] = 1;
    return s;
  };
  r.add_out(
      "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, "
      "float eps) -> (Tensor, Tensor, Tensor)",
      [stat_shape](const Args& a) {
        const Tensor& x = a[0].as_tensor("native_layer_norm");
        int64_t axis =
            check_norm("native_layer_norm", x, a[1].as_int_list("native_layer_norm"), a[2], a[3]);
        const Shape s = stat_shape(x, axis);
        return std::vector<Tensor>{Tensor::meta(x.shape(), x.dtype()), Tensor::meta(s, x.dtype()),
                                   Tensor::meta(s, x.dtype())};
      },
      [](const Args& a, const std::vector<Tensor>& out) {
        const char* op = "native_layer_norm";
        const Tensor& x = a[0].as_tensor(op);
        int64_t axis = check_norm(op, x, a[1].as_int_list(op), a[2], a[3]);
        cpu::layer_norm(x, axis, opt_tensor(a[2], op), opt_tensor(a[3], op), a[4].as_double(op),
                        out[0], out[1], out[2]);
      });
  // eps=None is the epsilon of the dtype torch computes in (float for half types), as ATen does.
  auto rms_eps = [](const Tensor& x, const Value& eps) {
    if (!eps.is_none()) return eps.as_double("rms_norm");
    return x.dtype() == DType::kFloat64
               ? std::numeric_limits<double>::epsilon()
               : static_cast<double>(std::numeric_limits<float>::epsilon());
  };
  r.add_out(
      "rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) "
      "-> Tensor",
      [](const Args& a) {
        const Tensor& x = a[0].as_tensor("rms_norm");
        check_norm("rms_norm", x, a[1].as_int_list("rms_norm"), a[2], Value::none());
        return std::vector<Tensor>{Tensor::meta(x.shape(), x.dtype())};
      },
      [rms_eps](const Args& a, const std::vector<Tensor>& out) {
        const Tensor& x = a[0].as_tensor("rms_norm");
        int64_t axis = check_norm("rms_norm", x, a[1].as_int_list("rms_norm"), a[2], Value::none());
        cpu::rms_norm(x, axis, opt_tensor(a[2], "rms_norm"), rms_eps(x, a[3]), out[0]);
      });
  // The fused form also returns rstd, kept-dim shaped, in the compute dtype.
  r.add_out(
      "_fused_rms_norm(Tensor input, int[] normalized_shape, Tensor? weight, float? eps) -> "
      "(Tensor, Tensor)",
      [stat_shape](const Args& a) {
        const char* op = "_fused_rms_norm";
        const Tensor& x = a[0].as_tensor(op);
        int64_t axis = check_norm(op, x, a[1].as_int_list(op), a[2], Value::none());
        const DType acc = x.dtype() == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
        return std::vector<Tensor>{Tensor::meta(x.shape(), x.dtype()),
                                   Tensor::meta(stat_shape(x, axis), acc)};
      },
      [rms_eps](const Args& a, const std::vector<Tensor>& out) {
        const char* op = "_fused_rms_norm";
        const Tensor& x = a[0].as_tensor(op);
        int64_t axis = check_norm(op, x, a[1].as_int_list(op), a[2], Value::none());
        cpu::rms_norm(x, axis, opt_tensor(a[2], op), rms_eps(x, a[3]), out[0], out[1]);
      });
}

// ---------------------------------------------------------------- attention

constexpr const char* kSdpa = "scaled_dot_product_attention";

struct SdpaPlan {
  Tensor q, k, v, mask, out_view;  // out_view: set by the out function
  Shape out_shape;                 // torch's result shape
  Shape grouped_shape;             // out's shape as the kernel sees it (heads split for GQA)
  double scale;
  bool causal;
};

// Validates the arguments and prepares views: with enable_gqa, query's heads split into
// (kv heads, group) so key and value broadcast over the group without a copy.
SdpaPlan plan_sdpa(const Args& a) {
  SdpaPlan p;
  p.q = a[0].as_tensor(kSdpa);
  p.k = a[1].as_tensor(kSdpa);
  p.v = a[2].as_tensor(kSdpa);
  p.mask = opt_tensor(a[3], kSdpa);
  const double dropout_p = a[4].as_double(kSdpa);
  p.causal = a[5].as_bool(kSdpa);
  const bool gqa = a[7].as_bool(kSdpa);
  const Tensor q = p.q, k = p.k, v = p.v;  // the caller's shapes, for messages
  IP_CHECK(dropout_p == 0.0, kUnsupported, "[", kSdpa, "] dropout_p must be 0, got ", dropout_p,
           ": inplace runs inference only");
  IP_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, kShapeMismatch, "[", kSdpa, "] query ",
           shape_str(q.shape()), ", key ", shape_str(k.shape()), " and value ",
           shape_str(v.shape()), " must be at least 2-D");
  IP_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype() && is_floating(q.dtype()),
           kDTypeMismatch, "[", kSdpa,
           "] expected query, key and value of one floating dtype, got ", dtype_name(q.dtype()),
           ", ", dtype_name(k.dtype()), " and ", dtype_name(v.dtype()));
  IP_CHECK(q.size(-1) == k.size(-1), kShapeMismatch, "[", kSdpa, "] query ", shape_str(q.shape()),
           " and key ", shape_str(k.shape()), " differ in the embedding dim");
  IP_CHECK(k.size(-2) == v.size(-2), kShapeMismatch, "[", kSdpa, "] key ", shape_str(k.shape()),
           " and value ", shape_str(v.shape()), " differ in the sequence length");
  if (p.mask.defined()) {
    IP_CHECK(!p.causal, kInvalidArgument, "[", kSdpa,
             "] an explicit attn_mask cannot be combined with is_causal=True");
    IP_CHECK(p.mask.dtype() == DType::kBool || is_floating(p.mask.dtype()), kDTypeMismatch, "[",
             kSdpa, "] attn_mask must be bool or floating, got ", dtype_name(p.mask.dtype()));
  }
  const int64_t L = q.size(-2), E = q.size(-1), S = k.size(-2), Ev = v.size(-1);
  p.scale = a[6].is_none() ? 1.0 / std::sqrt(static_cast<double>(E)) : a[6].as_double(kSdpa);

  if (gqa && q.dim() >= 3 && k.dim() >= 3 && v.dim() >= 3 &&
      (k.size(-3) != q.size(-3) || v.size(-3) != q.size(-3))) {
    const int64_t hq = q.size(-3), hk = k.size(-3), hv = v.size(-3);
    IP_CHECK(hk == hv && hk > 0 && hq % hk == 0, kShapeMismatch, "[", kSdpa, "] query ",
             shape_str(q.shape()), " heads must be a multiple of key ", shape_str(k.shape()),
             " and value ", shape_str(v.shape()), " heads (enable_gqa)");
    const int64_t g = hq / hk;
    p.q = q.unflatten(-3, {hk, g});
    p.k = k.unsqueeze(-3);
    p.v = v.unsqueeze(-3);
    if (p.mask.defined() && p.mask.dim() >= 3)
      p.mask = p.mask.size(-3) == 1 ? p.mask.unsqueeze(-3) : p.mask.unflatten(-3, {hk, g});
  }
  // Output batch: the broadcast of every operand's batch dims (torch's matmul semantics).
  auto batch_of = [](const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); };
  auto bcast = [&](const Shape& x, const Shape& y) {
    const size_t n = std::max(x.size(), y.size());
    Shape out(n);
    for (size_t i = 0; i < n; ++i) {
      const int64_t dx = i < n - x.size() ? 1 : x[i - (n - x.size())];
      const int64_t dy = i < n - y.size() ? 1 : y[i - (n - y.size())];
      IP_CHECK(dx == dy || dx == 1 || dy == 1, kShapeMismatch, "[", kSdpa,
               "] batch dims do not broadcast: query ", shape_str(q.shape()), ", key ",
               shape_str(k.shape()), ", value ", shape_str(v.shape()),
               p.mask.defined() ? ", attn_mask " + shape_str(a[3].tensor.shape()) : "");
      out[i] = dx == 1 ? dy : dx;
    }
    return out;
  };
  Shape batch = bcast(bcast(batch_of(p.q), batch_of(p.k)), batch_of(p.v));
  if (p.mask.defined()) {
    const Tensor& m = p.mask;
    const int64_t ml = m.dim() >= 2 ? m.size(-2) : 1, ms = m.dim() >= 1 ? m.size(-1) : 1;
    IP_CHECK((ml == 1 || ml == L) && (ms == 1 || ms == S), kShapeMismatch, "[", kSdpa,
             "] attn_mask ", shape_str(a[3].tensor.shape()), " does not broadcast to the scores [",
             L, ",", S, "] of query ", shape_str(q.shape()), " and key ", shape_str(k.shape()));
    if (m.dim() > 2) batch = bcast(batch, batch_of(m));
  }
  p.grouped_shape = batch;
  p.grouped_shape.push_back(L);
  p.grouped_shape.push_back(Ev);
  p.out_shape = p.grouped_shape;
  if (p.q.dim() != q.dim()) {  // GQA: merge (kv heads, group) back into query heads
    const size_t h = p.out_shape.size() - 4;
    p.out_shape[h] *= p.out_shape[h + 1];
    p.out_shape.erase(p.out_shape.begin() + static_cast<long>(h) + 1);
  }
  return p;
}

void register_attention(Registry& r) {
  r.add_out(
      "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
      "Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, "
      "bool enable_gqa=False) -> Tensor",
      [](const Args& a) {
        SdpaPlan p = plan_sdpa(a);
        return std::vector<Tensor>{Tensor::meta(p.out_shape, p.q.dtype())};
      },
      [](const Args& a, const std::vector<Tensor>& out) {
        SdpaPlan p = plan_sdpa(a);
        cpu::scaled_dot_product_attention(p.q, p.k, p.v, p.mask, p.scale, p.causal,
                                          out[0].view(p.grouped_shape));
      });
  // What torch.export / make_fx record for CPU attention: 4-D operands, plus the per-row
  // log-sum-exp of the scores (in the compute dtype).
  auto flash_plan = [](const Args& a) {
    const Args full = {a[0], a[1], a[2], a[5], a[3], a[4], a[6], Value::boolean(false)};
    SdpaPlan p = plan_sdpa(full);
    for (const Tensor* t : {&p.q, &p.k, &p.v})
      IP_CHECK(t->dim() == 4, kShapeMismatch,
               "[_scaled_dot_product_flash_attention_for_cpu] "
               "expects 4-D query, key and value, got ",
               shape_str(p.q.shape()), ", ", shape_str(p.k.shape()), " and ",
               shape_str(p.v.shape()));
    return p;
  };
  auto lse_meta = [](const SdpaPlan& p) {
    Shape s(p.out_shape.begin(), p.out_shape.end() - 1);
    return Tensor::meta(s, p.q.dtype() == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32);
  };
  r.add_out(
      "_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, "
      "float dropout_p=0.0, bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None) "
      "-> (Tensor output, Tensor logsumexp)",
      [flash_plan, lse_meta](const Args& a) {
        SdpaPlan p = flash_plan(a);
        return std::vector<Tensor>{Tensor::meta(p.out_shape, p.q.dtype()), lse_meta(p)};
      },
      [flash_plan](const Args& a, const std::vector<Tensor>& out) {
        SdpaPlan p = flash_plan(a);
        cpu::scaled_dot_product_attention(p.q, p.k, p.v, p.mask, p.scale, p.causal, out[0], out[1]);
      });
}

// ---------------------------------------------------------------- dropout

void check_dropout(const char* op, double p, bool train) {
  IP_CHECK(p >= 0.0 && p <= 1.0, kInvalidArgument, "[", op,
           "] dropout probability has to be between 0 and 1, but got ", p);
  IP_CHECK(!train, kUnsupported, "[", op,
           "] training=True is not supported: inplace runs inference only (trace the model in "
           "eval mode or pass training=False)");
}

InferFn same_as_input(const char* op) {
  return [op](const Args& a) {
    const Tensor& x = a[0].as_tensor(op);
    check_dropout(op, a[1].as_double(op), a[2].as_bool(op));
    return std::vector<Tensor>{Tensor::meta(x.shape(), x.dtype())};
  };
}

OutFn identity_copy(const char* op) {
  return [op](const Args& a, const std::vector<Tensor>& out) {
    check_dropout(op, a[1].as_double(op), a[2].as_bool(op));
    out[0].copy_from(a[0].tensor);
  };
}

void register_dropout(Registry& r) {
  // aten form (input, p, train), then torch.nn.functional's (input, p=0.5, training=True,
  // inplace=False): FX records the latter with keyword names.
  for (const char* name : {"dropout", "alpha_dropout", "feature_alpha_dropout", "feature_dropout"})
    r.add_out(std::string(name) + "(Tensor input, float p, bool train) -> Tensor",
              same_as_input(name), identity_copy(name));
  for (const char* name :
       {"dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d"})
    r.add_out(std::string(name) +
                  ".functional(Tensor input, float p=0.5, bool training=True, bool inplace=False) "
                  "-> Tensor",
              same_as_input(name), identity_copy(name));
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
      [](const Args& a, const std::vector<Tensor>& out) {
        check_dropout("native_dropout", a[1].as_double("native_dropout"),
                      a[2].is_none() || a[2].as_bool("native_dropout"));
        out[0].copy_from(a[0].tensor);
        out[1].fill(Scalar(true));
      });
}

}  // namespace

void register_nn_ops(Registry& r) {
  register_norms(r);
  register_attention(r);
  register_dropout(r);
}

}  // namespace inplace
