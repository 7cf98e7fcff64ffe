#include "ops/matrix_args.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace inplace::matrix {

namespace {

void check_dtypes(const char* op, const char* na, const Tensor& a, const char* nb,
                  const Tensor& b) {
  IP_CHECK(a.dtype() == b.dtype(), kDTypeMismatch, "[", op, "] expected ", na, " and ", nb,
           " to have the same dtype, but got ", dtype_name(a.dtype()), " and ",
           dtype_name(b.dtype()));
  IP_CHECK(a.dtype() != DType::kBool, kDTypeMismatch, "[", op, "] not implemented for bool");
}

[[noreturn]] void fail_multiply(const char* op, const char* na, const Tensor& a, const char* nb,
                                const Tensor& b, const std::string& why) {
  IP_FAIL(kShapeMismatch, "[", op, "] ", na, " ", shape_str(a.shape()), " and ", nb, " ",
          shape_str(b.shape()), " cannot be multiplied", why.empty() ? "" : " (" + why + ")");
}

// torch.matmul's shapes: 1-D operands get a unit dim (removed again from the result), batch
// dims broadcast.
struct MatmulShape {
  bool a_vec, b_vec;
  Shape batch, out;
};

MatmulShape matmul_shape(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dim() < 1 || b.dim() < 1)
    fail_multiply(op, "self", a, "other", b, "both arguments need to be at least 1-D");
  MatmulShape s;
  s.a_vec = a.dim() == 1;
  s.b_vec = b.dim() == 1;
  const int64_t k = a.size(-1), kb = s.b_vec ? b.size(0) : b.size(-2);
  if (k != kb) fail_multiply(op, "self", a, "other", b, str_cat(k, " != ", kb));
  const Shape ab(a.shape().begin(), a.shape().end() - std::min<int64_t>(a.dim(), 2));
  const Shape bb(b.shape().begin(), b.shape().end() - std::min<int64_t>(b.dim(), 2));
  const size_t nb = std::max(ab.size(), bb.size());
  s.batch.resize(nb);
  for (size_t i = 0; i < nb; ++i) {
    const int64_t da = i < nb - ab.size() ? 1 : ab[i - (nb - ab.size())];
    const int64_t db = i < nb - bb.size() ? 1 : bb[i - (nb - bb.size())];
    if (da != db && da != 1 && db != 1)
      fail_multiply(op, "self", a, "other", b, "batch dims do not broadcast");
    s.batch[i] = da == 1 ? db : da;
  }
  s.out = s.batch;
  if (!s.a_vec) s.out.push_back(a.size(-2));
  if (!s.b_vec) s.out.push_back(b.size(-1));
  return s;
}

// mat1 [m, k] @ mat2 [k, n] of one dtype (mm, addmm).
void check_mm(const char* op, const Tensor& x, const Tensor& y) {
  if (x.dim() != 2 || y.dim() != 2) fail_multiply(op, "mat1", x, "mat2", y, "expected 2-D");
  if (x.size(1) != y.size(0))
    fail_multiply(op, "mat1", x, "mat2", y, str_cat(x.size(1), " != ", y.size(0)));
  check_dtypes(op, "mat1", x, "mat2", y);
}

}  // namespace

Tensor mm_meta(const Args& a) {
  const Tensor& x = a[0].as_tensor("mm");
  const Tensor& y = a[1].as_tensor("mm");
  check_mm("mm", x, y);
  return Tensor::meta({x.size(0), y.size(1)}, x.dtype());
}

Tensor bmm_meta(const Args& a) {
  const Tensor& x = a[0].as_tensor("bmm");
  const Tensor& y = a[1].as_tensor("bmm");
  if (x.dim() != 3 || y.dim() != 3) fail_multiply("bmm", "batch1", x, "batch2", y, "expected 3-D");
  if (x.size(0) != y.size(0)) fail_multiply("bmm", "batch1", x, "batch2", y, "batch sizes differ");
  if (x.size(2) != y.size(1))
    fail_multiply("bmm", "batch1", x, "batch2", y, str_cat(x.size(2), " != ", y.size(1)));
  check_dtypes("bmm", "batch1", x, "batch2", y);
  return Tensor::meta({x.size(0), x.size(1), y.size(2)}, x.dtype());
}

Tensor matmul_meta(const char* op, const Args& a) {
  const Tensor& x = a[0].as_tensor(op);
  const Tensor& y = a[1].as_tensor(op);
  MatmulShape s = matmul_shape(x, y, op);
  check_dtypes(op, "self", x, "other", y);
  return Tensor::meta(s.out, x.dtype());
}

Tensor vector_product_meta(const char* op, int64_t adim, const Args& a) {
  const Tensor& x = a[0].as_tensor(op);
  const Tensor& y = a[1].as_tensor(op);
  if (x.dim() != adim || y.dim() != 1)
    fail_multiply(op, "self", x, "other", y, str_cat("expected ", adim, "-D and 1-D"));
  return matmul_meta(op, a);
}

Tensor addmm_meta(const Args& a) {
  const Tensor& self = a[0].as_tensor("addmm");
  const Tensor& x = a[1].as_tensor("addmm");
  const Tensor& y = a[2].as_tensor("addmm");
  check_mm("addmm", x, y);
  check_dtypes("addmm", "self", self, "mat1", x);
  const Shape out{x.size(0), y.size(1)};
  IP_CHECK(broadcast_shapes(self.shape(), out, "addmm") == out, kShapeMismatch, "[addmm] self ",
           shape_str(self.shape()), " cannot be broadcast to the product's shape ", shape_str(out));
  const Scalar beta = a[3].as_scalar("addmm"), alpha = a[4].as_scalar("addmm");
  IP_CHECK(is_floating(x.dtype()) || (!beta.is_float() && !alpha.is_float()), kDTypeMismatch,
           "[addmm] for integral input tensors, beta and alpha must not be floating point, got "
           "beta=",
           beta.to_string(), " alpha=", alpha.to_string());
  return Tensor::meta(out, x.dtype());
}

Tensor linear_meta(const Args& a) {
  const Tensor& x = a[0].as_tensor("linear");
  const Tensor& w = a[1].as_tensor("linear");
  if (x.dim() < 1 || w.dim() < 1 || w.dim() > 2)
    fail_multiply("linear", "input", x, "weight", w, "expected input >= 1-D, weight 1-D or 2-D");
  const int64_t in = w.size(-1);
  if (x.size(-1) != in)
    fail_multiply("linear", "input", x, "weight", w,
                  str_cat("in features ", x.size(-1), " != ", in));
  check_dtypes("linear", "input", x, "weight", w);
  Shape out(x.shape().begin(), x.shape().end() - 1);
  if (w.dim() == 2) out.push_back(w.size(0));
  if (!a[2].is_none()) {
    const Tensor& b = a[2].as_tensor("linear");
    check_dtypes("linear", "input", x, "bias", b);
    Shape bs = broadcast_shapes(b.shape(), out, "linear");
    IP_CHECK(bs == out, kShapeMismatch, "[linear] bias ", shape_str(b.shape()),
             " cannot be broadcast to the output ", shape_str(out), " of input ",
             shape_str(x.shape()), " and weight ", shape_str(w.shape()));
  }
  return Tensor::meta(out, x.dtype());
}

}  // namespace inplace::matrix
