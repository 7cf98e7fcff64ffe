// The bf16-weight products with their RMSNorm prologue, made by the fuse_norm_prologues pass:
//   rms_norm_linear_bf16_weight(x, norm_weight, eps, w, bias)
//       = linear_bf16_weight(rms_norm(x, [k], norm_weight, eps), w, bias)
//   rms_norm_swiglu_bf16_weight(x, norm_weight, eps, w_gate, w_up)
//       = swiglu_bf16_weight(rms_norm(x, [k], norm_weight, eps), w_gate, w_up)
// A decoder layer's two norms each feed one product (q/k/v merged, gate/up): on a GPU the norm
// then runs inside the product's launch (every block normalises the few input rows it reads)
// instead of in a launch of its own. The linear form may also rotate a prefix of its columns
// (cos, sin, rotary_cols: the fuse_rotary_epilogues pass): each d-wide block of the first
// rotary_cols columns of every row becomes rotary_embedding(block, cos, sin), cos and sin d
// elements (one position). Here on the cpu the step is the chain itself: the norm into a
// temporary, then the product, then the rotation, so the results are the chain's bit for bit.
#include <algorithm>

#include "core/error.h"
#include "kernels/cpu/rotary.h"
#include "ops/registry.h"

namespace inplace {

namespace {

const OpDef& op(const char* name) {
  const OpDef* d = Registry::get().find(name);
  IP_CHECK(d != nullptr && d->infer && d->out, kInternal, "[", name, "] is not registered");
  return *d;
}

// rms_norm's arguments from the fused op's first three: x, [k], norm_weight, eps.
Args norm_args(const char* name, const Args& a) {
  const Tensor& x = a[0].as_tensor(name);
  IP_CHECK(x.dim() >= 1, kShapeMismatch, "[", name, "] input ", shape_str(x.shape()),
           " must have at least one dim");
  return {a[0], Value::int_list({x.size(-1)}), a[1], a[2]};
}

// The product's arguments: the normalised input, then the fused op's `count` arguments after
// eps.
Args product_args(const Value& normed, const Args& a, size_t count) {
  Args p{normed};
  p.insert(p.end(), a.begin() + 3, a.begin() + 3 + static_cast<std::ptrdiff_t>(count));
  return p;
}

constexpr const char* kLinear = "rms_norm_linear_bf16_weight";

// The rotary arguments of the linear form (a[5], a[6], a[7]); false when there is no rotation.
bool rotary_of(const Args& a, int64_t n, Tensor* cos, Tensor* sin, int64_t* cols) {
  if (a.size() < 8 || a[7].as_int(kLinear) == 0) return false;
  *cos = a[5].as_tensor(kLinear);
  *sin = a[6].as_tensor(kLinear);
  *cols = a[7].as_int(kLinear);
  const int64_t d = cos->dim() ? cos->size(-1) : 0;
  IP_CHECK(cos->dtype() == DType::kFloat32 && sin->dtype() == DType::kFloat32 && d > 0 &&
               d % 2 == 0 && cos->numel() == d && sin->shape() == cos->shape() && *cols > 0 &&
               *cols % d == 0 && *cols <= n,
           kShapeMismatch, "[", kLinear, "] cos ", shape_str(cos->shape()), " and sin ",
           shape_str(sin->shape()), " must be float32 rows of one even d dividing rotary_cols ",
           *cols, " (at most the ", n, " columns)");
  return true;
}

// y[.., :cols] as rows of d-wide blocks, each rotated as rotary_embedding does (from a copy of
// the block: the kernel reads both halves of what it writes).
void rotate_prefix(const Tensor& y, const Tensor& cos, const Tensor& sin, int64_t cols) {
  const int64_t n = y.size(-1), d = cos.size(-1), rows = y.numel() / n;
  const Tensor c = cos.reshape({d}), s = sin.reshape({d});
  Tensor block = Tensor::empty({d}, DType::kFloat32);
  float* yp = y.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j0 = 0; j0 < cols; j0 += d) {
      float* at = yp + r * n + j0;
      std::copy(at, at + d, block.data<float>());
      cpu::rotary_embedding(block, c, s, Tensor::borrow(at, {d}, DType::kFloat32));
    }
}

void add(Registry& r, const char* name, const char* product, size_t count,
         const std::string& schema) {
  r.add_out(
      schema,
      [name, product, count](const Args& a) {
        const std::vector<Tensor> normed = op("rms_norm").infer(norm_args(name, a));
        std::vector<Tensor> out =
            op(product).infer(product_args(Value::from_tensor(normed[0]), a, count));
        Tensor cos, sin;
        int64_t cols = 0;
        rotary_of(a, out[0].size(-1), &cos, &sin, &cols);  // checks the rotary arguments
        return out;
      },
      [name, product, count](const Args& a, const std::vector<Tensor>& out) {
        const Args na = norm_args(name, a);
        const std::vector<Tensor> meta = op("rms_norm").infer(na);
        Tensor normed = Tensor::empty(meta[0].shape(), meta[0].dtype());
        op("rms_norm").out(na, {normed});
        op(product).out(product_args(Value::from_tensor(normed), a, count), out);
        Tensor cos, sin;
        int64_t cols = 0;
        if (rotary_of(a, out[0].size(-1), &cos, &sin, &cols)) {
          IP_CHECK(out[0].is_contiguous(), kUnsupported, "[", kLinear,
                   "] a rotated result that is not contiguous");
          rotate_prefix(out[0], cos.contiguous(), sin.contiguous(), cols);
        }
      });
}

}  // namespace

void register_linear_lowp_norm_ops(Registry& r) {
  add(r, kLinear, "linear_bf16_weight", 2,
      "rms_norm_linear_bf16_weight(Tensor input, Tensor norm_weight, float eps, Tensor weight, "
      "Tensor? bias=None, Tensor? cos=None, Tensor? sin=None, int rotary_cols=0) -> Tensor");
  add(r, "rms_norm_swiglu_bf16_weight", "swiglu_bf16_weight", 2,
      "rms_norm_swiglu_bf16_weight(Tensor input, Tensor norm_weight, float eps, Tensor "
      "gate_weight, Tensor up_weight) -> Tensor");
}

}  // namespace inplace
