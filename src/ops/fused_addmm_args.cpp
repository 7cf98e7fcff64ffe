#include "ops/fused_addmm_args.h"

#include "core/error.h"
#include "ops/fused_linear_args.h"

namespace inplace::fused_addmm {

namespace {

// A 1-D operand of `n` elements in the input's dtype.
void check_row(const char* what, const Value& v, DType dtype, int64_t n) {
  if (v.is_none()) return;
  const Tensor& t = v.as_tensor(kName);
  IP_CHECK(t.dtype() == dtype, kDTypeMismatch, "[", kName, "] ", what, " is ",
           dtype_name(t.dtype()), " but the input is ", dtype_name(dtype));
  IP_CHECK(t.dim() == 1 && t.size(0) == n, kShapeMismatch, "[", kName, "] ", what, " ",
           shape_str(t.shape()), " must be [", n, "]");
}

}  // namespace

Tensor meta(const Args& a) {
  const Tensor& x = a[kInput].as_tensor(kName);
  const Tensor& w = a[kWeight].as_tensor(kName);
  IP_CHECK(is_floating(x.dtype()) && x.dtype() != DType::kFloat64 && w.dtype() == x.dtype(),
           kDTypeMismatch, "[", kName,
           "] expected a float32, bfloat16 or float16 input and a weight of its dtype, got ",
           dtype_name(x.dtype()), " and ", dtype_name(w.dtype()));
  IP_CHECK(x.dim() >= 1 && w.dim() == 2 && x.size(-1) == w.size(0), kShapeMismatch, "[", kName,
           "] input ", shape_str(x.shape()), " does not fit weight ", shape_str(w.shape()),
           " (stored [in, out])");
  Shape out(x.shape().begin(), x.shape().end() - 1);
  out.push_back(w.size(1));
  check_row("bias", a[kBias], x.dtype(), w.size(1));
  if (has_arg(a, kResidual)) {
    const Tensor& r = a[kResidual].as_tensor(kName);
    IP_CHECK(r.dtype() == x.dtype() && r.shape() == out, kShapeMismatch, "[", kName, "] residual ",
             shape_str(r.shape()), " ", dtype_name(r.dtype()), " must be ", shape_str(out), " ",
             dtype_name(x.dtype()));
  }
  if (has_arg(a, kEps)) {
    a[kEps].as_double(kName);
    check_row("norm weight", a.size() > kNormWeight ? a[kNormWeight] : Value::none(), x.dtype(),
              x.size(-1));
    check_row("norm bias", a.size() > kNormBias ? a[kNormBias] : Value::none(), x.dtype(),
              x.size(-1));
  } else {
    IP_CHECK(!has_arg(a, kNormWeight) && !has_arg(a, kNormBias), kInvalidArgument, "[", kName,
             "] a norm weight or bias without the norm's eps");
  }
  fused_linear::check_epilogue(kName, a, kEpilogue, x.dtype());
  return Tensor::meta(out, x.dtype());
}

Args layer_norm_args(const Args& a) {
  const Tensor& x = a[kInput].as_tensor(kName);
  auto at = [&](size_t i) { return a.size() > i ? a[i] : Value::none(); };
  return {a[kInput], Value::int_list({x.size(-1)}), at(kNormWeight), at(kNormBias),
          a[kEps],   Value::boolean(false)};
}

}  // namespace inplace::fused_addmm
