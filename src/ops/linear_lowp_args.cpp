#include "ops/linear_lowp_args.h"

#include "core/error.h"

namespace inplace::linear_lowp {

namespace {

// x [..., k] and w [n, k] give [..., n].
Shape product_shape(const char* op, const Tensor& x, const Tensor& w) {
  IP_CHECK(x.dtype() == DType::kFloat32 && w.dtype() == DType::kBFloat16, kDTypeMismatch, "[", op,
           "] expected a float32 input and a bfloat16 weight, got ", dtype_name(x.dtype()), " and ",
           dtype_name(w.dtype()));
  IP_CHECK(x.dim() >= 1 && w.dim() == 2 && x.size(-1) == w.size(1), kShapeMismatch, "[", op,
           "] input ", shape_str(x.shape()), " does not fit weight ", shape_str(w.shape()));
  Shape out(x.shape().begin(), x.shape().end() - 1);
  out.push_back(w.size(0));
  return out;
}

void check_bias(const char* op, const Value& bias, const Tensor& w) {
  if (bias.is_none()) return;
  const Tensor& b = bias.as_tensor(op);
  IP_CHECK(b.dtype() == DType::kFloat32 && b.dim() == 1 && b.size(0) == w.size(0), kShapeMismatch,
           "[", op, "] bias ", shape_str(b.shape()), " does not fit weight ", shape_str(w.shape()));
}

}  // namespace

Tensor linear_meta(const Args& a) {
  const Tensor& x = a[kInput].as_tensor(kLinear);
  const Tensor& w = a[kWeight].as_tensor(kLinear);
  Shape out = product_shape(kLinear, x, w);
  check_bias(kLinear, a[kBias], w);
  return Tensor::meta(out, DType::kFloat32);
}

Tensor linear_add_meta(const Args& a) {
  const Tensor& x = a[kInput].as_tensor(kLinearAdd);
  const Tensor& w = a[kWeight].as_tensor(kLinearAdd);
  Shape out = product_shape(kLinearAdd, x, w);
  check_bias(kLinearAdd, a[kBias], w);
  const Tensor& r = a[kResidual].as_tensor(kLinearAdd);
  IP_CHECK(r.dtype() == DType::kFloat32 && r.shape() == out, kShapeMismatch, "[", kLinearAdd,
           "] residual ", shape_str(r.shape()), " ", dtype_name(r.dtype()), " must be float32 ",
           shape_str(out));
  return Tensor::meta(out, DType::kFloat32);
}

Tensor swiglu_meta(const Args& a) {
  const Tensor& x = a[kInput].as_tensor(kSwiglu);
  const Tensor& wg = a[kWeight].as_tensor(kSwiglu);
  const Tensor& wu = a[kUpWeight].as_tensor(kSwiglu);
  Shape out = product_shape(kSwiglu, x, wg);
  IP_CHECK(product_shape(kSwiglu, x, wu) == out, kShapeMismatch, "[", kSwiglu, "] gate weight ",
           shape_str(wg.shape()), " and up weight ", shape_str(wu.shape()), " differ");
  return Tensor::meta(out, DType::kFloat32);
}

bool rotary_of(const Args& a, int64_t n, Tensor* cos, Tensor* sin, int64_t* cols) {
  if (rotary_cols(a) == 0) return false;
  *cos = a[kCos].as_tensor(kNormLinear);
  *sin = a[kSin].as_tensor(kNormLinear);
  *cols = a[kRotaryCols].as_int(kNormLinear);
  const int64_t d = cos->dim() ? cos->size(-1) : 0;
  IP_CHECK(cos->dtype() == DType::kFloat32 && sin->dtype() == DType::kFloat32 && d > 0 &&
               d % 2 == 0 && cos->numel() == d && sin->shape() == cos->shape() && *cols > 0 &&
               *cols % d == 0 && *cols <= n,
           kShapeMismatch, "[", kNormLinear, "] cos ", shape_str(cos->shape()), " and sin ",
           shape_str(sin->shape()), " must be float32 rows of one even d dividing rotary_cols ",
           *cols, " (at most the ", n, " columns)");
  return true;
}

Args norm_args(const char* name, const Args& a) {
  const Tensor& x = a[kInput].as_tensor(name);
  IP_CHECK(x.dim() >= 1, kShapeMismatch, "[", name, "] input ", shape_str(x.shape()),
           " must have at least one dim");
  return {a[kInput], Value::int_list({x.size(-1)}), a[kNormWeight], a[kEps]};
}

}  // namespace inplace::linear_lowp
