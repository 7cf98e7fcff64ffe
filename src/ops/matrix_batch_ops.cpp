// Batched products with an added term: baddbmm (one product per batch) and addbmm (the
// products summed over the batch), with their in-place forms. bmm itself is in matrix_ops.cpp.
#include "kernels/cpu/matrix.h"
#include "ops/registry.h"

namespace inplace {

namespace {

struct BatchProduct {
  int64_t batch, rows, cols;
};

// Whether `s` broadcasts to exactly `out`.
bool broadcasts_to(const Shape& s, const Shape& out) {
  if (s.size() > out.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const int64_t d = s[s.size() - 1 - i], o = out[out.size() - 1 - i];
    if (d != o && d != 1) return false;
  }
  return true;
}

// Checks self, batch1, batch2 and beta/alpha as torch does; `summed` for addbmm.
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

void register_baddbmm(Registry& r) {
  r.add_out(
      "baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> "
      "Tensor",
      [](const Args& a) {
        BatchProduct p = check_batch_product(a, "baddbmm", false);
        return std::vector<Tensor>{Tensor::meta({p.batch, p.rows, p.cols}, a[0].tensor.dtype())};
      },
      [](const Args& a, const std::vector<Tensor>& out) {
        check_batch_product(a, "baddbmm", false);
        const Scalar beta = a[3].as_scalar("beta"), alpha = a[4].as_scalar("alpha");
        // beta == 0 ignores self entirely (NaN/inf there do not propagate), as torch does.
        if (beta.to_double() != 0.0) out[0].copy_from(a[0].tensor);
        cpu::matmul(a[1].tensor, a[2].tensor, out[0], alpha, beta);
      });
  r.add_inplace(
      "baddbmm_(Tensor(a!) self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar "
      "alpha=1) -> Tensor(a!)",
      "baddbmm");
}

void register_addbmm(Registry& r) {
  r.add_out(
      "addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> "
      "Tensor",
      [](const Args& a) {
        BatchProduct p = check_batch_product(a, "addbmm", true);
        return std::vector<Tensor>{Tensor::meta({p.rows, p.cols}, a[0].tensor.dtype())};
      },
      [](const Args& a, const std::vector<Tensor>& out) {
        const BatchProduct p = check_batch_product(a, "addbmm", true);
        const Scalar beta = a[3].as_scalar("beta"), alpha = a[4].as_scalar("alpha");
        const Tensor& x = a[1].tensor;
        const Tensor& y = a[2].tensor;
        if (beta.to_double() != 0.0) out[0].copy_from(a[0].tensor);
        if (p.batch == 0) {  // no products: beta * self (or zeros), through an empty product
          cpu::matmul(x.reshape({p.rows, 0}), y.reshape({0, p.cols}), out[0], alpha, beta);
          return;
        }
        // Accumulates batch by batch into the result, as torch's addbmm does.
        for (int64_t b = 0; b < p.batch; ++b)
          cpu::matmul(x.select(0, b), y.select(0, b), out[0], alpha, b == 0 ? beta : Scalar(1));
      });
  r.add_inplace(
      "addbmm_(Tensor(a!) self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar "
      "alpha=1) -> Tensor(a!)",
      "addbmm");
}

}  // namespace

void register_matrix_batch_ops(Registry& r) {
  register_baddbmm(r);
  register_addbmm(r);
}

}  // namespace inplace
