#include "ops/nn_args.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"

namespace inplace::nn {

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

double rms_eps(const Tensor& x, const Value& eps) {
  if (!eps.is_none()) return eps.as_double("rms_norm");
  return x.dtype() == DType::kFloat64 ? std::numeric_limits<double>::epsilon()
                                      : static_cast<double>(std::numeric_limits<float>::epsilon());
}

double norm_weight_offset(const Args& a, size_t offset) {
  return a.size() > offset && !a[offset].is_none() ? a[offset].as_double("weight_offset") : 0.0;
}

void check_upcast_norm_weight(const char* op, const Tensor& x, const Args& a, size_t w,
                              size_t in_float, size_t offset) {
  const Tensor& weight = a[w].as_tensor(op);
  const bool f = a.size() > in_float && a[in_float].as_bool(op);
  const double off = norm_weight_offset(a, offset);
  IP_CHECK(off == 0 || f, kInvalidArgument, "[", op, "] weight_offset ", off,
           " needs weight_in_float");
  const bool fits = off != 0 ? weight.dtype() == x.dtype() || weight.dtype() == DType::kFloat32
                             : weight.dtype() == (f ? DType::kFloat32 : x.dtype());
  IP_CHECK(fits, kDTypeMismatch, "[", op, "] weight is ", dtype_name(weight.dtype()),
           " but must be ",
           off != 0 ? "the input's dtype or float32 (weight_offset)"
           : f      ? "float32 (weight_in_float)"
                    : std::string(dtype_name(x.dtype())) + " (the input's dtype)");
  IP_CHECK(x.dim() >= 1 && weight.dim() == 1 && weight.size(0) == x.size(-1), kShapeMismatch, "[",
           op, "] weight ", shape_str(weight.shape()), " does not fit input ",
           shape_str(x.shape()));
}

int64_t sdpa_window(const Args& a) {
  if (a.size() <= 8 || a[8].is_none()) return 0;
  const int64_t w = a[8].as_int(kSdpa);
  IP_CHECK(w >= 0, kInvalidArgument, "[", kSdpa, "] window must be >= 0, got ", w);
  IP_CHECK(w == 0 || (a[3].is_none() && !a[5].as_bool(kSdpa)), kInvalidArgument, "[", kSdpa,
           "] window ", w, " cannot be combined with attn_mask or is_causal");
  return w;
}

Tensor window_keys(const Tensor& k, int64_t window) {
  const int64_t S = k.size(-2);
  return window > 0 && S > window ? k.slice(k.dim() - 2, S - window, S) : k;
}

SdpaPlan plan_sdpa(const Args& a) {
  SdpaPlan p;
  p.q = a[0].as_tensor(kSdpa);
  p.k = a[1].as_tensor(kSdpa);
  p.v = a[2].as_tensor(kSdpa);
  p.mask = opt_tensor(a[3], kSdpa);
  const double dropout_p = a[4].as_double(kSdpa);
  p.causal = a[5].as_bool(kSdpa);
  const bool gqa = a[7].as_bool(kSdpa);
  const Tensor &q = a[0].tensor, &k = a[1].tensor, &v = a[2].tensor;  // the caller's shapes
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
  p.scale = sdpa_scale(a[6], E);

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

SdpaPlan plan_sdpa_flash(const Args& a) {
  const Args full = {a[0], a[1], a[2], a[5], a[3], a[4], a[6], Value::boolean(false)};
  SdpaPlan p = plan_sdpa(full);
  for (const Tensor* t : {&p.q, &p.k, &p.v})
    IP_CHECK(t->dim() == 4, kShapeMismatch,
             "[_scaled_dot_product_flash_attention_for_cpu] "
             "expects 4-D query, key and value, got ",
             shape_str(p.q.shape()), ", ", shape_str(p.k.shape()), " and ", shape_str(p.v.shape()));
  return p;
}

double sdpa_scale(const Value& scale, int64_t head_dim) {
  return scale.is_none() ? 1.0 / std::sqrt(static_cast<double>(head_dim)) : scale.as_double(kSdpa);
}

void check_dropout(const char* op, double p, bool train) {
  IP_CHECK(p >= 0.0 && p <= 1.0, kInvalidArgument, "[", op,
           "] dropout probability has to be between 0 and 1, but got ", p);
  IP_CHECK(!train, kUnsupported, "[", op,
           "] training=True is not supported: inplace runs inference only (trace the model in "
           "eval mode or pass training=False)");
}

}  // namespace inplace::nn
