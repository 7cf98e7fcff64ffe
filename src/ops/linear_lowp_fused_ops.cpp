// The bf16-weight linear with its decode epilogues, made by the fuse_linear_epilogues pass:
//   linear_bf16_weight_add(x, w, bias, residual) = residual + linear_bf16_weight(x, w, bias)
//   swiglu_bf16_weight(x, w_gate, w_up)          = silu(x @ w_gate^T) * (x @ w_up^T)
// Each is one step that reads the weights once and writes only its result: the residual add
// after o_proj and down_proj, and the gate/up pair with silu and mul of a SwiGLU MLP, without
// the temporaries and the extra launches of the chain. Exact: every result element is computed
// by the same float operations, in the same order, as the chain's kernels.
#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/matrix.h"
#include "ops/registry.h"

namespace inplace {

namespace {

// The shape rule shared with linear_bf16_weight: x [..., k] and w [n, k] give [..., n].
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

// y[rows, n] = x[rows, k] @ w^T (+ beta * y) for contiguous operands: the streaming gemv for a
// few rows, the widened-weight matmul for a prompt.
void product(const Tensor& x, const Tensor& w, float* y, int64_t rows, float beta) {
  const int64_t k = w.size(1), n = w.size(0);
  const Tensor xc = x.contiguous(), wc = w.contiguous();
  for (int64_t r0 = 0; r0 < rows; r0 += cpu::kGemvMaxRows) {
    const int64_t m = std::min(cpu::kGemvMaxRows, rows - r0);
    cpu::gemv_parallel(cpu::GemvArgs<BFloat16>{xc.data<float>() + r0 * k, k, m, wc.data<BFloat16>(),
                                               k, n, k, y + r0 * n, n, 1.0f, beta});
  }
}

constexpr const char* kAdd = "linear_bf16_weight_add";

Tensor check_add(const Args& a) {
  const Tensor& x = a[0].as_tensor(kAdd);
  const Tensor& w = a[1].as_tensor(kAdd);
  Shape out = product_shape(kAdd, x, w);
  if (!a[2].is_none()) {
    const Tensor& b = a[2].as_tensor(kAdd);
    IP_CHECK(b.dtype() == DType::kFloat32 && b.dim() == 1 && b.size(0) == w.size(0), kShapeMismatch,
             "[", kAdd, "] bias ", shape_str(b.shape()), " does not fit weight ",
             shape_str(w.shape()));
  }
  const Tensor& r = a[3].as_tensor(kAdd);
  IP_CHECK(r.dtype() == DType::kFloat32 && r.shape() == out, kShapeMismatch, "[", kAdd,
           "] residual ", shape_str(r.shape()), " ", dtype_name(r.dtype()), " must be float32 ",
           shape_str(out));
  return Tensor::meta(out, DType::kFloat32);
}

void run_add(const Args& a, const std::vector<Tensor>& out) {
  check_add(a);
  const Tensor& x = a[0].tensor;
  const Tensor& w = a[1].tensor;
  const Tensor& y = out[0];
  const int64_t n = w.size(0), rows = y.numel() / std::max<int64_t>(n, 1);
  IP_CHECK(y.is_contiguous(), kUnsupported, "[", kAdd, "] a result that is not contiguous");
  if (y.numel() == 0) return;
  float* yp = y.data<float>();
  if (a[2].is_none()) {
    // y = residual, then y = x @ w^T + y: the dot product's sum, then one add, as the chain.
    y.copy_from(a[3].tensor);
    product(x, w, yp, rows, 1.0f);
    return;
  }
  // With a bias the chain rounds (dot + bias) before adding the residual: do the same.
  product(x, w, yp, rows, 0.0f);
  const Tensor b = a[2].tensor.contiguous(), r = a[3].tensor.contiguous();
  const float* bp = b.data<float>();
  const float* rp = r.data<float>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) yp[i * n + j] = (yp[i * n + j] + bp[j]) + rp[i * n + j];
}

constexpr const char* kSwiglu = "swiglu_bf16_weight";

Tensor check_swiglu(const Args& a) {
  const Tensor& x = a[0].as_tensor(kSwiglu);
  const Tensor& wg = a[1].as_tensor(kSwiglu);
  const Tensor& wu = a[2].as_tensor(kSwiglu);
  Shape out = product_shape(kSwiglu, x, wg);
  IP_CHECK(product_shape(kSwiglu, x, wu) == out, kShapeMismatch, "[", kSwiglu, "] gate weight ",
           shape_str(wg.shape()), " and up weight ", shape_str(wu.shape()), " differ");
  return Tensor::meta(out, DType::kFloat32);
}

// Columns are done in tiles of kTile: the gate's and the up's products of a tile in two small
// buffers on the stack, then silu(g) * u into the result, so no step allocates.
constexpr int64_t kTile = 64;

void run_swiglu(const Args& a, const std::vector<Tensor>& out) {
  check_swiglu(a);
  const Tensor x = a[0].tensor.contiguous();
  const Tensor wg = a[1].tensor.contiguous(), wu = a[2].tensor.contiguous();
  const Tensor& y = out[0];
  IP_CHECK(y.is_contiguous(), kUnsupported, "[", kSwiglu, "] a result that is not contiguous");
  const int64_t k = wg.size(1), n = wg.size(0), rows = y.numel() / std::max<int64_t>(n, 1);
  if (y.numel() == 0) return;
  float* yp = y.data<float>();
  const float* xp = x.data<float>();
  const int64_t tiles = (n + kTile - 1) / kTile;
  auto tile = [&](int64_t t) {
    const int64_t j0 = t * kTile, cols = std::min(kTile, n - j0);
    for (int64_t r0 = 0; r0 < rows; r0 += cpu::kGemvMaxRows) {
      const int64_t m = std::min(cpu::kGemvMaxRows, rows - r0);
      float g[cpu::kGemvMaxRows * kTile], u[cpu::kGemvMaxRows * kTile];
      cpu::gemv(cpu::GemvArgs<BFloat16>{xp + r0 * k, k, m, wg.data<BFloat16>() + j0 * k, k, cols, k,
                                        g, kTile, 1.0f, 0.0f},
                0, cols);
      cpu::gemv(cpu::GemvArgs<BFloat16>{xp + r0 * k, k, m, wu.data<BFloat16>() + j0 * k, k, cols, k,
                                        u, kTile, 1.0f, 0.0f},
                0, cols);
      for (int64_t i = 0; i < m; ++i) {
        float* gi = g + i * kTile;
        cpu::silu_f32(gi, gi, cols);  // silu's own kernel: the same values as the chain's
        for (int64_t j = 0; j < cols; ++j) yp[(r0 + i) * n + j0 + j] = gi[j] * u[i * kTile + j];
      }
    }
  };
  ThreadPool* pool = current_thread_pool();
  if (pool == nullptr || pool->threads() < 2 || tiles < 2) {
    for (int64_t t = 0; t < tiles; ++t) tile(t);
  } else {
    pool->parallel_for(tiles, tile);
  }
}

}  // namespace

void register_linear_lowp_fused_ops(Registry& r) {
  r.add_out(
      "linear_bf16_weight_add(Tensor input, Tensor weight, Tensor? bias, Tensor residual) -> "
      "Tensor",
      [](const Args& a) { return std::vector<Tensor>{check_add(a)}; }, run_add);
  r.add_out(
      "swiglu_bf16_weight(Tensor input, Tensor gate_weight, Tensor up_weight) -> Tensor",
      [](const Args& a) { return std::vector<Tensor>{check_swiglu(a)}; }, run_swiglu);
}

}  // namespace inplace
