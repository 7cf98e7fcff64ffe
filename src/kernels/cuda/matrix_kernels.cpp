// CUDA kernels of the matrix products (mm, bmm, matmul, dot, mv, addmm, baddbmm, linear)
// through cuBLAS: fp32 (full fp32, no TF32, to stay close to the cpu), fp16 and bf16 (tensor
// cores, fp32 accumulation), fp64. Operands are taken with their own strides where cuBLAS can
// read them (either matrix dim with unit stride); batches with one stride run as one strided
// batched call, others one call per batch.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <optional>

#include "kernels/cuda/call_data.h"
#include "kernels/cuda/cublas_loader.h"
#include "kernels/cuda/device_runtime.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/registration.h"

namespace inplace::cuda {

namespace {

void check(cublasStatus_t s, const char* what) {
  IP_CHECK(s == CUBLAS_STATUS_SUCCESS, kInternal, "[cuda] cuBLAS ", what, " failed (status ",
           static_cast<int>(s), ")");
}

// cuBLAS's workspace: fixed, so that calls can be captured into a CUDA graph without
// allocating (the size cuBLAS recommends on Hopper).
constexpr size_t kBlasWorkspace = 32u << 20;

// One cuBLAS handle per thread and device, set to `stream` and then to `workspace` (a context's
// own: contexts whose products run at the same time on different streams must not share one),
// or to the thread's own for products called outside a context. In that order: setting the
// stream puts the handle back on cuBLAS's default workspace.
cublasHandle_t handle(void* stream, Workspace* workspace) {
  struct Handle {
    cublasHandle_t h = nullptr;
    void* own = nullptr;
    bool tried = false;  // own is allocated at the first product called outside a context
    Handle() { check(cublas().create(&h), "handle creation"); }
    ~Handle() {
      cublas().destroy(h);
      cudaFree(own);
    }
  };
  thread_local Handle h;
  check(cublas().set_stream(h.h, static_cast<cudaStream_t>(stream)), "set stream");
  if (!workspace && !h.tried) {
    h.tried = true;
    if (cudaMalloc(&h.own, kBlasWorkspace) != cudaSuccess) h.own = nullptr;
  }
  void* w = workspace ? workspace->get(kWorkspaceBlas, kBlasWorkspace) : h.own;
  // (None when the thread's own could not be allocated: the default one, as set_stream left it.)
  if (w) check(cublas().set_workspace(h.h, w, kBlasWorkspace), "workspace");
  return h.h;
}

struct Mat {
  bool row_major = true;
  int64_t ld = 1;
};

// How cuBLAS can read an r x c matrix with strides (sr, sc); nullopt when it cannot.
std::optional<Mat> layout(int64_t r, int64_t c, int64_t sr, int64_t sc) {
  if ((sc == 1 || c == 1) && (r == 1 || sr >= std::max<int64_t>(c, 1)))
    return Mat{true, r == 1 ? std::max<int64_t>(c, 1) : sr};
  if ((sr == 1 || r == 1) && (c == 1 || sc >= std::max<int64_t>(r, 1)))
    return Mat{false, c == 1 ? std::max<int64_t>(r, 1) : sc};
  return std::nullopt;
}

// The batch offsets of `t` (batch dims broadcast to `batch`): one stride when they collapse.
struct Batches {
  std::optional<int64_t> stride;
  std::vector<int64_t> offsets;
};
Batches batches(const Tensor& t, const Shape& batch) {
  const int64_t nb = static_cast<int64_t>(batch.size()), lead = nb - (t.dim() - 2);
  std::vector<int64_t> st(nb, 0);
  for (int64_t d = 0; d < nb; ++d)
    if (d >= lead && t.size(d - lead) != 1) st[d] = t.stride(d - lead);
  Batches b;
  int64_t expect = -1, inner = 1;
  bool ok = true;
  for (int64_t d = nb - 1; d >= 0; --d) {
    if (batch[d] == 1) continue;
    if (expect < 0) {
      expect = st[d];
      inner = batch[d];
    } else {
      ok &= st[d] == expect * inner;
      inner *= batch[d];
    }
  }
  if (ok) {
    b.stride = expect < 0 ? 0 : expect;
    return b;
  }
  const int64_t count = numel_of(batch);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, off = 0;
    for (int64_t d = nb - 1; d >= 0; --d) {
      off += (rest % batch[d]) * st[d];
      rest /= batch[d];
    }
    b.offsets.push_back(off);
  }
  return b;
}

cudaDataType_t data_type(DType t) {
  switch (t) {
    case DType::kFloat32:
      return CUDA_R_32F;
    case DType::kFloat64:
      return CUDA_R_64F;
    case DType::kFloat16:
      return CUDA_R_16F;
    case DType::kBFloat16:
      return CUDA_R_16BF;
    default:
      IP_FAIL(kUnsupported, "[cuda] matrix products of ", dtype_name(t),
              " are not supported on cuda (float32, float64, float16, bfloat16)");
  }
}

Tensor contiguous_on_device(const Tensor& t, void* stream) {
  Tensor c = Tensor::empty(t.shape(), t.dtype(), t.device());
  copy_cast(operand(c), operand(t), stream);
  keep_for_graph(c);  // a captured graph replays this copy
  return c;
}

}  // namespace

// out[..., m, n] = alpha * a[..., m, k] @ b[..., k, n] + beta * out (beta 0 ignores out).
void matmul(const Tensor& a_in, const Tensor& b_in, const Tensor& out, Scalar alpha_s,
            Scalar beta_s, void* stream, Workspace* workspace) {
  const int64_t m = out.size(-2), n = out.size(-1), k = a_in.size(-1);
  if (out.numel() == 0) return;
  const Shape batch(out.shape().begin(), out.shape().end() - 2);
  if (k == 0) {
    if (beta_s.to_double() == 0.0) fill(operand(out), Scalar(int64_t{0}), stream);
    return;
  }
  auto readable = [&](const Tensor& t) {
    return layout(t.size(-2), t.size(-1), t.stride(-2), t.stride(-1))
               ? t
               : contiguous_on_device(t, stream);
  };
  const Tensor a = readable(a_in), b = readable(b_in);
  const std::optional<Mat> c_layout = layout(m, n, out.stride(-2), out.stride(-1));
  const bool staged = !c_layout || !c_layout->row_major;
  const Tensor c = staged ? contiguous_on_device(out, stream) : out;
  const Mat ma = *layout(m, k, a.stride(-2), a.stride(-1));
  const Mat mb = *layout(k, n, b.stride(-2), b.stride(-1));
  const int64_t ldc = layout(m, n, c.stride(-2), c.stride(-1))->ld;

  cublasHandle_t h = handle(stream, workspace);
  const cudaDataType_t type = data_type(out.dtype());
  const bool f64 = out.dtype() == DType::kFloat64;
  const cublasComputeType_t compute = f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  const float alpha_f = static_cast<float>(alpha_s.to_double());
  const float beta_f = static_cast<float>(beta_s.to_double());
  const double alpha_d = alpha_s.to_double(), beta_d = beta_s.to_double();
  const void* alpha = f64 ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = f64 ? static_cast<const void*>(&beta_d) : &beta_f;
  // Row-major C = A B is column-major C^T = B^T A^T.
  const cublasOperation_t op_b = mb.row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t op_a = ma.row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  const size_t es = dtype_size(out.dtype());
  const char* pa = static_cast<const char*>(a.data_ptr());
  const char* pb = static_cast<const char*>(b.data_ptr());
  char* pc = static_cast<char*>(c.data_ptr());
  const Batches ba = batches(a, batch), bb = batches(b, batch), bc = batches(c, batch);
  const int64_t count = numel_of(batch);
  if (ba.stride && bb.stride && bc.stride) {
    check(cublas().gemm_strided_batched(h, op_b, op_a, n, m, k, alpha, pb, type, mb.ld, *bb.stride,
                                        pa, type, ma.ld, *ba.stride, beta, pc, type, ldc,
                                        *bc.stride, count, compute, CUBLAS_GEMM_DEFAULT),
          "gemm (strided batched)");
  } else {
    for (int64_t i = 0; i < count; ++i) {
      auto off = [&](const Batches& x) { return x.stride ? *x.stride * i : x.offsets[i]; };
      check(cublas().gemm(h, op_b, op_a, n, m, k, alpha, pb + off(bb) * es, type, mb.ld,
                          pa + off(ba) * es, type, ma.ld, beta, pc + off(bc) * es, type, ldc,
                          compute, CUBLAS_GEMM_DEFAULT),
            "gemm");
    }
  }
  if (staged) copy_cast(operand(out), operand(c), stream);
}

namespace {

// matmul's vector cases: a 1-D operand is a row (left) or a column (right) matrix.
void run_matmul(const Tensor& a, const Tensor& b, const Tensor& out, Scalar alpha, Scalar beta,
                const KernelContext& ctx) {
  const bool a_vec = a.dim() == 1, b_vec = b.dim() == 1;
  Tensor o = out;
  if (a_vec) o = o.unsqueeze(o.dim() - (b_vec ? 0 : 1));
  if (b_vec) o = o.unsqueeze(o.dim());
  matmul(a_vec ? a.unsqueeze(0) : a, b_vec ? b.unsqueeze(1) : b, o, alpha, beta, ctx.queue,
         workspace(ctx));
}

const Scalar kOne(int64_t{1}), kZero(int64_t{0});

// cuBLAS multiplies float32, float64, float16 and bfloat16: other dtypes (integer products) are
// refused before the run, so the compiler places such a step on the host.
std::string float_products(const Args& a) {
  for (const Value& v : a)
    if (v.is_tensor()) {
      const DType d = v.tensor.dtype();
      if (d != DType::kFloat32 && d != DType::kFloat64 && d != DType::kFloat16 &&
          d != DType::kBFloat16)
        return str_cat("matrix products of ", dtype_name(d),
                       " are not supported on cuda (float32, float64, float16, bfloat16)");
    }
  return {};
}

}  // namespace

void register_matrix_kernels(KernelTable& t) {
  const auto C = DeviceType::kCuda;
  const Kernel product = [](const Args& a, const std::vector<Tensor>& outs,
                            const KernelContext& ctx) {
    run_matmul(a[0].tensor, a[1].tensor, outs[0], kOne, kZero, ctx);
  };
  for (const char* n : {"mm", "bmm", "matmul", "dot", "mv"}) t.add(C, n, product, float_products);
  // self + products: self broadcast into out first, unless beta is 0 (then self is ignored).
  const Kernel add_product = [](const Args& a, const std::vector<Tensor>& outs,
                                const KernelContext& ctx) {
    const Scalar beta = a[3].as_scalar("addmm"), alpha = a[4].as_scalar("addmm");
    if (beta.to_double() != 0.0)
      copy_cast(operand(outs[0]), operand(a[0].tensor, outs[0].shape()), ctx.queue);
    matmul(a[1].tensor, a[2].tensor, outs[0], alpha, beta, ctx.queue, workspace(ctx));
  };
  t.add(C, "addmm", add_product, float_products);
  t.add(C, "baddbmm", add_product, float_products);
  t.add(
      C, "linear",
      [](const Args& a, const std::vector<Tensor>& outs, const KernelContext& ctx) {
        const bool has_bias = !a[2].is_none();
        if (has_bias) copy_cast(operand(outs[0]), operand(a[2].tensor, outs[0].shape()), ctx.queue);
        run_matmul(a[0].tensor, a[1].tensor.t(), outs[0], kOne, has_bias ? kOne : kZero, ctx);
      },
      float_products);
}

}  // namespace inplace::cuda
