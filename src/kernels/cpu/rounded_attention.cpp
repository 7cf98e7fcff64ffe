// rounded_attention's cpu kernel (ops/nn_ops.cpp; made by recognize_attention from attention
// written out at a half dtype): the chain it replaced, run by the chain's own cpu kernels on the
// operands as the plan views them (GQA: query heads split into (kv heads, group), the key and
// value broadcast over the group instead of repeat_kv's copies), so every element is bitwise
// the chain's: the scores q @ k^T (the matmul kernel, per head a [L, E] by [E, S] product over
// the key rows as they lie, as the chain's bmm over k.transpose(-2, -1)), scaled by `* scale` or
// `/ scale`, masked to -inf where the mask is false, softmax over the keys, then @ v; each op
// rounds its result to the dtype. Over a prefix of the cache (attend_filled_prefix) the result is
// the chain's over the whole masked cache too: a masked score takes no part in the max, its
// exp(-inf) adds an exact 0 to the softmax's sum (in order, in double), and its zero weight adds
// nothing to the product with v (summed in order from p = 0).
#include <limits>

#include "core/error.h"
#include "kernels/cpu/chain.h"
#include "kernels/cpu/matrix.h"
#include "kernels/cpu/registration.h"
#include "ops/nn_args.h"

namespace inplace::cpu {

namespace {

using namespace nn;

const ChainOp kMul("mul.Tensor"), kDiv("div.Tensor"), kNot("bitwise_not"),
    kFill("masked_fill.Scalar"), kSoftmax("_softmax");

void run(const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
  const char* op = "rounded_attention";
  SdpaPlan p = plan_sdpa(a);
  IP_CHECK(!p.mask.defined() || p.mask.dtype() == DType::kBool, kDTypeMismatch, "[", op,
           "] attn_mask must be bool, got ", dtype_name(p.mask.dtype()));
  const Value& scale = a[6];
  const bool divide = a.size() > 8 && a[8].as_bool(op);
  Shape scores_shape(p.grouped_shape.begin(), p.grouped_shape.end() - 1);
  scores_shape.push_back(p.k.size(-2));
  const Tensor s = Tensor::empty(scores_shape, p.q.dtype());
  matmul(p.q, p.k.transpose(-2, -1), s);
  const Value sv = Value::from_tensor(s);
  if (!scale.is_none()) (divide ? kDiv : kMul).into({sv, scale}, s);
  if (p.mask.defined())
    kFill.into({sv, Value::from_tensor(kNot({Value::from_tensor(p.mask)})),
                Value::floating(-std::numeric_limits<double>::infinity())},
               s);
  const Tensor w = kSoftmax({sv, Value::integer(-1), Value::boolean(false)});
  matmul(w, p.v, out[0].view(p.grouped_shape));
}

}  // namespace

void register_rounded_attention_kernels(KernelTable& table) {
  table.add(DeviceType::kCpu, "rounded_attention", run);
}

}  // namespace inplace::cpu
