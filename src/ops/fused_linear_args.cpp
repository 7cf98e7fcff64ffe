#include "ops/fused_linear_args.h"

#include "core/error.h"
#include "ops/fused_pointwise_args.h"

namespace inplace::fused_linear {

namespace {

// x [..., k] and w [n, k] give [..., n]; w a float dtype no wider than x's.
Shape product_shape(const char* op, const Tensor& x, const Tensor& w) {
  IP_CHECK(is_floating(x.dtype()) && is_floating(w.dtype()) &&
               dtype_size(w.dtype()) <= dtype_size(x.dtype()),
           kDTypeMismatch, "[", op,
           "] expected a floating input and a weight of a float dtype no wider, got ",
           dtype_name(x.dtype()), " and ", dtype_name(w.dtype()));
  IP_CHECK(x.dim() >= 1 && w.dim() == 2 && x.size(-1) == w.size(1), kShapeMismatch, "[", op,
           "] input ", shape_str(x.shape()), " does not fit weight ", shape_str(w.shape()));
  Shape out(x.shape().begin(), x.shape().end() - 1);
  out.push_back(w.size(0));
  return out;
}

// An operand in the input's dtype (bias, residual, norm weight, rotary tables).
void check_dtype(const char* op, const char* what, const Tensor& t, DType dtype) {
  IP_CHECK(t.dtype() == dtype, kDTypeMismatch, "[", op, "] ", what, " is ", dtype_name(t.dtype()),
           " but the input is ", dtype_name(dtype));
}

// A bias of the product's n columns.
void check_bias(const char* op, const Value& bias, const Tensor& x, int64_t n) {
  if (bias.is_none()) return;
  const Tensor& b = bias.as_tensor(op);
  check_dtype(op, "bias", b, x.dtype());
  IP_CHECK(b.dim() == 1 && b.size(0) == n, kShapeMismatch, "[", op, "] bias ", shape_str(b.shape()),
           " does not fit the product's ", n, " columns");
}

// A grouped product's weights: each fits x, of the first's dtype, kMaxWeights at most; returns
// the result's columns.
int64_t grouped_columns(const Tensor& x, const std::vector<Tensor>& ws) {
  IP_CHECK(ws.size() <= static_cast<size_t>(kMaxWeights), kInvalidArgument, "[", kLinear, "] ",
           ws.size(), " weights; a grouped product reads at most ", kMaxWeights);
  int64_t n = 0;
  for (const Tensor& w : ws) {
    IP_CHECK(w.dtype() == ws[0].dtype(), kDTypeMismatch, "[", kLinear, "] more_weights of ",
             dtype_name(w.dtype()), " after a weight of ", dtype_name(ws[0].dtype()));
    n += product_shape(kLinear, x, w).back();
  }
  return n;
}

const OpDef& op(const char* name) {
  const OpDef* d = Registry::get().find(name);
  IP_CHECK(d != nullptr && d->infer, kInternal, "[", name, "] is not registered");
  return *d;
}

}  // namespace

std::vector<Tensor> product_weights(const Args& a) {
  std::vector<Tensor> ws{a[kWeight].as_tensor(kLinear)};
  if (a.size() > kMoreWeights && !a[kMoreWeights].is_none())
    for (const Value& w : a[kMoreWeights].items) ws.push_back(w.as_tensor(kLinear));
  return ws;
}

int64_t product_rows(const Args& a) {
  int64_t n = 0;
  for (const Tensor& w : product_weights(a)) n += w.dim() ? w.size(0) : 0;
  return n;
}

std::vector<Value> product_biases(const Args& a) {
  std::vector<Value> bs;
  if (has_items(a, kMoreBiases)) {
    bs.push_back(a[kBias]);
    for (const Value& b : a[kMoreBiases].items) bs.push_back(b);
    return bs;
  }
  int64_t at = 0;
  for (const Tensor& w : product_weights(a)) {
    const int64_t n = w.dim() ? w.size(0) : 0;
    bs.push_back(a[kBias].is_none() ? a[kBias]
                                    : Value::from_tensor(a[kBias].tensor.slice(-1, at, at + n)));
    at += n;
  }
  return bs;
}

Args product_args(const char* norm_form, const Value& input, const Args& a) {
  if (std::string(norm_form) == kNormGatedMlp)
    return {input, a[kProductWeight], a[kProductWeight + 1],
            a.size() > kNormActivation ? a[kNormActivation] : Value::string(kSilu)};
  Args p{input, a[kProductWeight], a[kProductWeight + 1], Value::none()};
  if (a.size() > kNormMoreWeights) p.push_back(a[kNormMoreWeights]);
  if (a.size() > kNormMoreBiases) p.push_back(a[kNormMoreBiases]);
  return p;
}

Tensor linear_meta(const Args& a) {
  const Tensor& x = a[kInput].as_tensor(kLinear);
  const std::vector<Tensor> ws = product_weights(a);
  Shape out = product_shape(kLinear, x, ws[0]);
  out.back() = grouped_columns(x, ws);
  if (has_items(a, kMoreBiases)) {  // a bias per weight
    const size_t count = a[kMoreBiases].items.size();
    IP_CHECK(!a[kBias].is_none() && count + 1 == ws.size(), kInvalidArgument, "[", kLinear, "] ",
             count, " more_biases for ", ws.size(), " weights",
             a[kBias].is_none() ? " without a bias" : "", "; give a bias for each weight");
    const std::vector<Value> bs = product_biases(a);
    for (size_t i = 0; i < ws.size(); ++i) check_bias(kLinear, bs[i], x, ws[i].size(0));
  } else {
    check_bias(kLinear, a[kBias], x, out.back());
  }
  if (has_arg(a, kResidual)) {
    const Tensor& r = a[kResidual].as_tensor(kLinear);
    check_dtype(kLinear, "residual", r, x.dtype());
    IP_CHECK(r.shape() == out, kShapeMismatch, "[", kLinear, "] residual ", shape_str(r.shape()),
             " must be ", shape_str(out));
  }
  check_epilogue(kLinear, a, kLinearEpilogue, x.dtype());
  return Tensor::meta(out, x.dtype());
}

std::string activation_of(const Args& a) {
  if (a.size() <= kActivation || a[kActivation].is_none()) return kSilu;
  const std::string act = a[kActivation].as_string(kGatedMlp);
  IP_CHECK(act == kSilu || act == kGeluTanh, kUnsupported, "[", kGatedMlp, "] activation '", act,
           "' is not supported ('", kSilu, "' and '", kGeluTanh, "' are)");
  return act;
}

Tensor gated_mlp_meta(const Args& a) {
  const Tensor& x = a[kInput].as_tensor(kGatedMlp);
  const Tensor& wg = a[kWeight].as_tensor(kGatedMlp);
  const Tensor& wu = a[kUpWeight].as_tensor(kGatedMlp);
  activation_of(a);
  Shape out = product_shape(kGatedMlp, x, wg);
  IP_CHECK(product_shape(kGatedMlp, x, wu) == out && wg.dtype() == wu.dtype(), kShapeMismatch, "[",
           kGatedMlp, "] gate weight ", shape_str(wg.shape()), " ", dtype_name(wg.dtype()),
           " and up weight ", shape_str(wu.shape()), " ", dtype_name(wu.dtype()), " differ");
  return Tensor::meta(out, x.dtype());
}

Tensor norm_form_meta(const char* norm_form, const Args& a) {
  const bool linear = std::string(norm_form) == kNormLinear;
  const std::string norm = norm_of(norm_form, a);
  const std::vector<Tensor> normed = op(norm_op(norm)).infer(norm_op_args(norm_form, a));
  const Tensor& nw = a[kNormWeight].as_tensor(norm_form);
  const DType dt = a[kInput].as_tensor(norm_form).dtype();
  if (norm == kNormRms)  // upcast_rms_norm's rule checks its weight's dtype
    check_dtype(norm_form, "norm weight", nw, dt);
  if (norm == kNormUpcastOnePlusWeight)  // 1 + w.to(float32) of the model's own weight
    IP_CHECK(nw.dtype() == dt || nw.dtype() == DType::kFloat32, kDTypeMismatch, "[", norm_form,
             "] norm weight is ", dtype_name(nw.dtype()), " but must be ", dtype_name(dt),
             " or float32 (norm '", kNormUpcastOnePlusWeight, "')");
  if (norm == kNormLayer) {  // layer_norm's rule checks the weight's and bias's shapes
    check_dtype(norm_form, "norm weight", nw, dt);
    if (has_arg(a, kNormBias)) check_dtype(norm_form, "norm bias", a[kNormBias].tensor, dt);
  } else {
    IP_CHECK(!linear || !has_arg(a, kNormBias), kInvalidArgument, "[", norm_form,
             "] a norm bias with norm '", norm, "' (only '", kNormLayer, "' has one)");
  }
  const Args p = product_args(norm_form, Value::from_tensor(normed[0]), a);
  Tensor out = linear ? linear_meta(p) : gated_mlp_meta(p);
  Tensor cos, sin;
  int64_t cols = 0;
  if (linear && rotary_of(a, out.size(-1), &cos, &sin, &cols))  // checks them
    IP_CHECK(!has_items(a, kNormEpilogue), kInvalidArgument, "[", norm_form,
             "] an epilogue program after a rotary epilogue");
  if (linear) check_epilogue(norm_form, a, kNormEpilogue, dt);
  return out;
}

bool rotary_of(const Args& a, int64_t n, Tensor* cos, Tensor* sin, int64_t* cols) {
  if (rotary_cols(a) == 0) return false;
  *cos = a[kCos].as_tensor(kNormLinear);
  *sin = a[kSin].as_tensor(kNormLinear);
  *cols = a[kRotaryCols].as_int(kNormLinear);
  const DType dtype = a[kInput].as_tensor(kNormLinear).dtype();
  const int64_t d = cos->dim() ? cos->size(-1) : 0;
  IP_CHECK(cos->dtype() == dtype && sin->dtype() == dtype && d > 0 && d % 2 == 0 &&
               cos->numel() == d && sin->shape() == cos->shape() && *cols > 0 && *cols % d == 0 &&
               *cols <= n,
           kShapeMismatch, "[", kNormLinear, "] cos ", shape_str(cos->shape()), " and sin ",
           shape_str(sin->shape()), " must be ", dtype_name(dtype),
           " rows of one even d dividing rotary_cols ", *cols, " (at most the ", n, " columns)");
  return true;
}

Args norm_args(const char* name, const Args& a) {
  const Tensor& x = a[kInput].as_tensor(name);
  IP_CHECK(x.dim() >= 1, kShapeMismatch, "[", name, "] input ", shape_str(x.shape()),
           " must have at least one dim");
  return {a[kInput], Value::int_list({x.size(-1)}), a[kNormWeight], a[kEps]};
}

std::string norm_of(const char* norm_form, const Args& a) {
  const size_t at = std::string(norm_form) == kNormLinear ? kLinearNorm : kGatedMlpNorm;
  if (a.size() <= at || a[at].is_none()) return kNormRms;
  const std::string norm = a[at].as_string(norm_form);
  const bool layer = norm == kNormLayer && std::string(norm_form) == kNormLinear;
  IP_CHECK(norm == kNormRms || norm == kNormUpcast || norm == kNormUpcastFloatWeight ||
               norm == kNormUpcastOnePlusWeight || layer,
           kInvalidArgument, "[", norm_form, "] norm '", norm, "' is not one of '", kNormRms,
           "', '", kNormUpcast, "', '", kNormUpcastFloatWeight, "', '", kNormUpcastOnePlusWeight,
           std::string(norm_form) == kNormLinear ? "', '" + std::string(kNormLayer) : "", "'");
  return norm;
}

const char* norm_op(const std::string& norm) {
  return norm == kNormRms ? "rms_norm" : norm == kNormLayer ? "layer_norm" : "upcast_rms_norm";
}

void check_epilogue(const char* op, const Args& a, size_t pos, DType dtype) {
  if (!has_items(a, pos)) return;
  pointwise::Program p;
  try {
    p = pointwise::decode(a[pos].as_int_list(op), std::vector<DType>{dtype});
  } catch (const Error& e) {  // the program's own words, named as this op's epilogue
    throw_error(e.code(), str_cat("[", op, "] epilogue: ", e.what()));
  }
  IP_CHECK(p.out == dtype, kDTypeMismatch, "[", op, "] an epilogue whose result is ",
           dtype_name(p.out), ", not the input's ", dtype_name(dtype));
}

Args norm_op_args(const char* norm_form, const Args& a, const Value& float_weight) {
  const std::string norm = norm_of(norm_form, a);
  if (norm == kNormRms) return norm_args(norm_form, a);
  if (norm == kNormLayer) {
    Args n = norm_args(norm_form, a);  // input, [k], norm_weight, eps
    n.insert(n.begin() + 3, a.size() > kNormBias ? a[kNormBias] : Value::none());
    n.push_back(Value::boolean(false));
    return n;
  }
  if (norm != kNormUpcastOnePlusWeight)
    return {a[kInput], a[kNormWeight], a[kEps], Value::boolean(norm == kNormUpcastFloatWeight)};
  if (!float_weight.is_none()) return {a[kInput], float_weight, a[kEps], Value::boolean(true)};
  const Tensor& w = a[kNormWeight].as_tensor(norm_form);
  return {a[kInput], Value::from_tensor(Tensor::meta(w.shape(), DType::kFloat32)), a[kEps],
          Value::boolean(true)};
}

}  // namespace inplace::fused_linear
