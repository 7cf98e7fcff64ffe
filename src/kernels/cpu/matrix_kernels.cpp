// The cpu kernels of the matrix products (mm, bmm, matmul, dot, mv, addmm, linear, baddbmm,
// addbmm), registered into the kernel table. Each checks its call as the declaration does
// (ops/matrix_args.h, ops/matrix_batch_args.h) before computing.
#include "kernels/cpu/matrix.h"
#include "kernels/cpu/registration.h"
#include "ops/matrix_args.h"
#include "ops/matrix_batch_args.h"

namespace inplace::cpu {

namespace {

constexpr DeviceType kCpu = DeviceType::kCpu;

// Runs a matmul-shaped product into `out` (whose shape matrix::matmul_meta gave).
void run_matmul(const Tensor& a, const Tensor& b, const Tensor& out, Scalar alpha, Scalar beta) {
  const bool a_vec = a.dim() == 1, b_vec = b.dim() == 1;
  Tensor o = out;
  if (a_vec) o = o.unsqueeze(o.dim() - (b_vec ? 0 : 1));
  if (b_vec) o = o.unsqueeze(o.dim());
  matmul(a_vec ? a.unsqueeze(0) : a, b_vec ? b.unsqueeze(1) : b, o, alpha, beta);
}

}  // namespace

void register_matrix_batch_kernels(KernelTable& t) {
  t.add(kCpu, "baddbmm", [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    matrix::check_batch_product(a, "baddbmm", false);
    const Scalar beta = a[3].as_scalar("beta"), alpha = a[4].as_scalar("alpha");
    // beta == 0 ignores self entirely (NaN/inf there do not propagate), as torch does.
    if (beta.to_double() != 0.0) out[0].copy_from(a[0].tensor);
    matmul(a[1].tensor, a[2].tensor, out[0], alpha, beta);
  });
  t.add(kCpu, "addbmm", [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    const matrix::BatchProduct p = matrix::check_batch_product(a, "addbmm", true);
    const Scalar beta = a[3].as_scalar("beta"), alpha = a[4].as_scalar("alpha");
    const Tensor& x = a[1].tensor;
    const Tensor& y = a[2].tensor;
    if (beta.to_double() != 0.0) out[0].copy_from(a[0].tensor);
    if (p.batch == 0) {  // no products: beta * self (or zeros), through an empty product
      matmul(x.reshape({p.rows, 0}), y.reshape({0, p.cols}), out[0], alpha, beta);
      return;
    }
    // Accumulates batch by batch into the result, as torch's addbmm does.
    for (int64_t b = 0; b < p.batch; ++b)
      matmul(x.select(0, b), y.select(0, b), out[0], alpha, b == 0 ? beta : Scalar(1));
  });
}

void register_matrix_kernels(KernelTable& t) {
  t.add(kCpu, "mm", [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    matrix::mm_meta(a);
    matmul(a[0].tensor, a[1].tensor, out[0]);
  });
  t.add(kCpu, "bmm", [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    matrix::bmm_meta(a);
    matmul(a[0].tensor, a[1].tensor, out[0]);
  });
  t.add(kCpu, "matmul", [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    matrix::matmul_meta("matmul", a);
    run_matmul(a[0].tensor, a[1].tensor, out[0], 1, 0);
  });
  for (const auto& [name, adim] : {std::pair<const char*, int64_t>{"dot", 1}, {"mv", 2}}) {
    const char* op = name;
    const int64_t d = adim;
    t.add(kCpu, op, [op, d](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
      matrix::vector_product_meta(op, d, a);
      run_matmul(a[0].tensor, a[1].tensor, out[0], 1, 0);
    });
  }
  t.add(kCpu, "addmm", [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    matrix::addmm_meta(a);
    const Scalar beta = a[3].as_scalar("addmm"), alpha = a[4].as_scalar("addmm");
    // beta == 0 ignores self entirely (NaN/inf there do not propagate), as torch does.
    if (beta.to_double() != 0.0) out[0].copy_from(a[0].tensor);
    matmul(a[1].tensor, a[2].tensor, out[0], alpha, beta);
  });
  t.add(kCpu, "linear", [](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
    matrix::linear_meta(a);
    const bool has_bias = !a[2].is_none();
    if (has_bias) out[0].copy_from(a[2].tensor);
    // weight [out, in] -> weight.t() is a transposed contiguous matrix: gemm takes it as is.
    run_matmul(a[0].tensor, a[1].tensor.t(), out[0], 1, has_bias ? 1 : 0);
  });
}

}  // namespace inplace::cpu
