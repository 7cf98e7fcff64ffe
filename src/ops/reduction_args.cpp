#include "ops/reduction_args.h"

#include "core/error.h"

namespace inplace::reduction {

Reduction plan_reduction(const Tensor& x, const Value& dim, bool keepdim, const char* op) {
  const int64_t nd = x.dim();
  Reduction r;
  r.mask.assign(static_cast<size_t>(nd), false);
  std::vector<int64_t> dims = dim.is_none() ? std::vector<int64_t>{} : dim.as_int_list(op);
  if (dims.empty()) r.mask.assign(static_cast<size_t>(nd), true);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, nd, op);
    if (nd == 0) continue;  // a 0-d tensor accepts dim 0 / -1 and reduces nothing
    IP_CHECK(!r.mask[w], kInvalidArgument, "[", op, "] dim ", w,
             " appears multiple times in the list of dims");
    r.mask[w] = true;
  }
  for (int64_t d = 0; d < nd; ++d) {
    if (!r.mask[d])
      r.out_shape.push_back(x.shape()[d]);
    else if (keepdim)
      r.out_shape.push_back(1);
  }
  return r;
}

namespace {

// max/min/argmax have no identity: every reduced dim must be non-empty.
void check_nonempty_reduction(const Tensor& x, const Reduction& r, const char* op) {
  for (int64_t d = 0; d < x.dim(); ++d)
    IP_CHECK(!r.mask[d] || x.shape()[d] > 0, kInvalidArgument, "[", op, "] cannot reduce over dim ",
             d, " of size 0 of input ", shape_str(x.shape()),
             " (no identity); pass a dim of non-zero size");
}

}  // namespace

std::optional<DType> opt_dtype(const Value& v, const char* op) {
  if (v.is_none()) return std::nullopt;
  return v.as_dtype(op);
}

SumArgs sum_args(const Args& a, bool has_dim, const char* op) {
  if (has_dim) return SumArgs{a[0].as_tensor(op), a[1], a[2].as_bool(op), a[3]};
  return SumArgs{a[0].as_tensor(op), Value::none(), false, a[1]};
}

DType sum_dtype(const Tensor& x, std::optional<DType> dtype) {
  if (dtype) return *dtype;
  return is_integral(x.dtype(), /*include_bool=*/true) ? DType::kInt64 : x.dtype();
}

DType mean_dtype(const Tensor& self, const Value& dtype) {
  const std::optional<DType> req = opt_dtype(dtype, "mean");
  const DType dt = req ? *req : self.dtype();
  IP_CHECK(is_floating(dt), kDTypeMismatch,
           "[mean] could not infer output dtype: input dtype must be floating point, got ",
           dtype_name(self.dtype()), req ? str_cat(" with dtype=", dtype_name(*req)) : "");
  return dt;
}

VarArgs var_args(const Args& a, VarForm form, const char* op) {
  auto unbiased = [op](const Value& v) { return v.as_bool(op) ? 1.0 : 0.0; };
  VarArgs v;
  v.self = a[0].as_tensor(op);
  switch (form) {
    case VarForm::kDim:
      v = VarArgs{v.self, a[1], unbiased(a[2]), a[3].as_bool(op)};
      break;
    case VarForm::kCorrection:
      v = VarArgs{v.self, a[1], a[2].is_none() ? 1.0 : a[2].as_double(op), a[3].as_bool(op)};
      break;
    case VarForm::kDefault:
      v = VarArgs{v.self, Value::none(), unbiased(a[1]), false};
      break;
  }
  IP_CHECK(is_floating(v.self.dtype()), kDTypeMismatch, "[", op,
           "] std and var only support floating point dtypes, got ", dtype_name(v.self.dtype()));
  return v;
}

Reduction amax_plan(const Args& a, const char* op) {
  const Tensor& x = a[0].as_tensor(op);
  Reduction red = plan_reduction(x, a[1], a[2].as_bool(op), op);
  check_nonempty_reduction(x, red, op);
  return red;
}

Reduction max_all_plan(const Tensor& x, const char* op) {
  IP_CHECK(x.numel() > 0, kInvalidArgument, "[", op, "] cannot reduce the empty tensor ",
           shape_str(x.shape()), " without a dim; pass a dim of non-zero size");
  return plan_reduction(x, Value::none(), false, op);
}

Reduction max_dim_plan(const Args& a, const char* op) {
  const Tensor& x = a[0].as_tensor(op);
  Reduction red = plan_reduction(x, Value::integer(a[1].as_int(op)), a[2].as_bool(op), op);
  check_nonempty_reduction(x, red, op);
  return red;
}

Reduction argmax_plan(const Args& a, const char* op) {
  const Tensor& x = a[0].as_tensor(op);
  IP_CHECK(x.dtype() != DType::kBool, kDTypeMismatch, "[", op, "] not implemented for bool");
  if (a[1].is_none())
    IP_CHECK(x.numel() > 0, kInvalidArgument, "[", op, "] cannot reduce the empty tensor ",
             shape_str(x.shape()), " without a dim; pass a dim of non-zero size");
  Value dim = a[1].is_none() ? Value::none() : Value::integer(a[1].as_int(op));
  Reduction red = plan_reduction(x, dim, a[2].as_bool(op), op);
  check_nonempty_reduction(x, red, op);
  return red;
}

int64_t legacy_softmax_dim(int64_t ndim) {
  return (ndim == 0 || ndim == 1 || ndim == 3) ? 0 : 1;
}

namespace {

SoftmaxArgs make_softmax(const Tensor& self, int64_t dim, std::optional<DType> dtype,
                         const char* op) {
  const DType dt = dtype ? *dtype : self.dtype();
  IP_CHECK(is_floating(dt), kDTypeMismatch, "[", op,
           "] expected a floating point input (or a floating dtype=), got ",
           dtype_name(self.dtype()));
  return SoftmaxArgs{self, wrap_dim(dim, self.dim(), op), dt};
}

}  // namespace

SoftmaxArgs softmax_args(const Args& a, SoftmaxForm form, const char* op) {
  const Tensor& x = a[0].as_tensor(op);
  switch (form) {
    case SoftmaxForm::kInt:
      return make_softmax(x, a[1].as_int(op), opt_dtype(a[2], op), op);
    case SoftmaxForm::kFunctional: {
      int64_t dim = a[1].is_none() ? legacy_softmax_dim(x.dim()) : a[1].as_int(op);
      return make_softmax(x, dim, opt_dtype(a[3], op), op);
    }
    case SoftmaxForm::kAten: {
      const bool to_float =
          a[2].as_bool(op) && (x.dtype() == DType::kFloat16 || x.dtype() == DType::kBFloat16);
      return make_softmax(x, a[1].as_int(op),
                          to_float ? std::optional<DType>(DType::kFloat32) : std::nullopt, op);
    }
  }
  IP_FAIL(kInternal, "[", op, "] unknown softmax form");
}

}  // namespace inplace::reduction
