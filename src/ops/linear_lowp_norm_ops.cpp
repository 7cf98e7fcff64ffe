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
// elements (one position). On the cpu the step is the chain itself (kernels/cpu/linear_lowp.cpp),
// so the results are the chain's bit for bit. Argument positions: ops/linear_lowp_args.h.
#include "core/error.h"
#include "ops/linear_lowp_args.h"
#include "ops/registry.h"

namespace inplace {

namespace {

const OpDef& op(const char* name) {
  const OpDef* d = Registry::get().find(name);
  IP_CHECK(d != nullptr && d->infer, kInternal, "[", name, "] is not registered");
  return *d;
}

void add(Registry& r, const char* name, const char* product, const std::string& schema) {
  r.add_out(
      schema,
      [name, product](const Args& a) {
        const std::vector<Tensor> normed = op("rms_norm").infer(linear_lowp::norm_args(name, a));
        std::vector<Tensor> out =
            op(product).infer(linear_lowp::product_args(Value::from_tensor(normed[0]), a));
        Tensor cos, sin;
        int64_t cols = 0;
        linear_lowp::rotary_of(a, out[0].size(-1), &cos, &sin, &cols);  // checks them
        return out;
      },
      nullptr);
}

}  // namespace

void register_linear_lowp_norm_ops(Registry& r) {
  add(r, linear_lowp::kNormLinear, linear_lowp::kLinear,
      "rms_norm_linear_bf16_weight(Tensor input, Tensor norm_weight, float eps, Tensor weight, "
      "Tensor? bias=None, Tensor? cos=None, Tensor? sin=None, int rotary_cols=0) -> Tensor");
  add(r, linear_lowp::kNormSwiglu, linear_lowp::kSwiglu,
      "rms_norm_swiglu_bf16_weight(Tensor input, Tensor norm_weight, float eps, Tensor "
      "gate_weight, Tensor up_weight) -> Tensor");
}

}  // namespace inplace
