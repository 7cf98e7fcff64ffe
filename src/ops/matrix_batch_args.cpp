#include "ops/matrix_batch_args.h"

#include <string>

#include "core/error.h"

namespace inplace::matrix {

namespace {

// Whether `s` broadcasts to exactly `out`.
bool broadcasts_to(const Shape& s, const Shape& out) {
  if (s.size() > out.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t d = s[s.size() - 1 - i], o = out[out.size() - 1 - i];
    if (d != o && d != 1) return false;
  }
  return true;
}

}  // namespace

BatchProduct check_batch_product(const Args& a, const char* op, bool summed) {
  const Tensor& self = a[0].as_tensor(op);
  const Tensor& x = a[1].as_tensor(op);
  const Tensor& y = a[2].as_tensor(op);
  auto fail = [&](const std::string& why) {
    IP_FAIL(kShapeMismatch, "[", op, "] batch1 ", shape_str(x.shape()), " and batch2 ",
            shape_str(y.shape()), " cannot be multiplied (", why, ")");
  };
  if (x.dim() != 3 || y.dim() != 3) fail("expected 3-D tensors");
  if (x.size(0) != y.size(0)) fail(str_cat("batch sizes ", x.size(0), " != ", y.size(0)));
  if (x.size(2) != y.size(1)) fail(str_cat(x.size(2), " != ", y.size(1)));
  for (const Tensor* t : {&x, &y})
    IP_CHECK(t->dtype() == self.dtype(), kDTypeMismatch, "[", op,
             "] expected self, batch1 and batch2 to have the same dtype, but got ",
             dtype_name(self.dtype()), ", ", dtype_name(x.dtype()), " and ", dtype_name(y.dtype()));
  IP_CHECK(self.dtype() != DType::kBool, kDTypeMismatch, "[", op, "] not implemented for bool");
  const BatchProduct p{x.size(0), x.size(1), y.size(2)};
  const Shape out = summed ? Shape{p.rows, p.cols} : Shape{p.batch, p.rows, p.cols};
  IP_CHECK(broadcasts_to(self.shape(), out), kShapeMismatch, "[", op, "] self ",
           shape_str(self.shape()), " cannot be broadcast to the product's shape ", shape_str(out));
  const Scalar beta = a[3].as_scalar("beta"), alpha = a[4].as_scalar("alpha");
  IP_CHECK(is_floating(x.dtype()) || (!beta.is_float() && !alpha.is_float()), kDTypeMismatch, "[",
           op, "] for integral input tensors, beta and alpha must not be floating point, got beta=",
           beta.to_string(), " alpha=", alpha.to_string());
  return p;
}

}  // namespace inplace::matrix
