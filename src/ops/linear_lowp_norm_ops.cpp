// The bf16-weight products with their RMSNorm prologue, made by the fuse_norm_prologues pass:
//   rms_norm_linear_bf16_weight(x, norm_weight, eps, w, bias)
//       = linear_bf16_weight(rms_norm(x, [k], norm_weight, eps), w, bias)
//   rms_norm_swiglu_bf16_weight(x, norm_weight, eps, w_gate, w_up)
//       = swiglu_bf16_weight(rms_norm(x, [k], norm_weight, eps), w_gate, w_up)
// A decoder layer's two norms each feed one product (q/k/v merged, gate/up): on a GPU the norm
// then runs inside the product's launch (every block normalises the few input rows it reads)
// instead of in a launch of its own. Here on the cpu the step is the chain itself: the norm
// into a temporary, then the product, so the results are the chain's bit for bit.
#include "core/error.h"
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

// The product's arguments: the normalised input, then the fused op's arguments after eps.
Args product_args(const Value& normed, const Args& a) {
  Args p{normed};
  p.insert(p.end(), a.begin() + 3, a.end());
  return p;
}

void add(Registry& r, const char* name, const char* product, const std::string& schema) {
  r.add_out(
      schema,
      [name, product](const Args& a) {
        const std::vector<Tensor> normed = op("rms_norm").infer(norm_args(name, a));
        return op(product).infer(product_args(Value::from_tensor(normed[0]), a));
      },
      [name, product](const Args& a, const std::vector<Tensor>& out) {
        const Args na = norm_args(name, a);
        const std::vector<Tensor> meta = op("rms_norm").infer(na);
        Tensor normed = Tensor::empty(meta[0].shape(), meta[0].dtype());
        op("rms_norm").out(na, {normed});
        op(product).out(product_args(Value::from_tensor(normed), a), out);
      });
}

}  // namespace

void register_linear_lowp_norm_ops(Registry& r) {
  add(r, "rms_norm_linear_bf16_weight", "linear_bf16_weight",
      "rms_norm_linear_bf16_weight(Tensor input, Tensor norm_weight, float eps, Tensor weight, "
      "Tensor? bias=None) -> Tensor");
  add(r, "rms_norm_swiglu_bf16_weight", "swiglu_bf16_weight",
      "rms_norm_swiglu_bf16_weight(Tensor input, Tensor norm_weight, float eps, Tensor "
      "gate_weight, Tensor up_weight) -> Tensor");
}

}  // namespace inplace
