// rotary_embedding(x, cos, sin): x * cos + rotate_half(x) * sin in one step, what the fuse_rotary
// pass rewrites Hugging Face's apply_rotary_pos_emb chain into. x, cos and sin share one dtype:
// float32, bfloat16 or float16 (the result's). The rounding points are the chain's at that dtype:
// each product is computed in float and rounded to the dtype (x * cos, and rotate_half(x) * sin,
// whose negation is exact), then their sum in float, rounded to the dtype. At float32 the
// roundings are identities, so one definition covers every dtype and older files.
#include "core/error.h"
#include "ops/nn_args.h"
#include "ops/registry.h"
#include "ops/rotary_args.h"

namespace inplace {

namespace rotary {

namespace {
constexpr const char* kOp = "rotary_embedding";
}  // namespace

bool takes_dtype(DType t) {
  return t == DType::kFloat32 || t == DType::kBFloat16 || t == DType::kFloat16;
}

Shape result_shape(const Args& a) {
  const Tensor& x = a[kX].as_tensor(kOp);
  const Tensor& c = a[kCos].as_tensor(kOp);
  const Tensor& s = a[kSin].as_tensor(kOp);
  for (const Tensor* t : {&x, &c, &s})
    IP_CHECK(t->dtype() == x.dtype() && takes_dtype(t->dtype()) && t->dim() >= 1, kDTypeMismatch,
             "[", kOp,
             "] expects x, cos and sin of one dtype (float32, bfloat16 or float16) and at least "
             "one dim, got x ",
             dtype_name(x.dtype()), ", ", dtype_name(t->dtype()), " ", shape_str(t->shape()));
  Shape out = broadcast_shapes(broadcast_shapes(x.shape(), c.shape(), kOp), s.shape(), kOp);
  IP_CHECK(out.back() % 2 == 0 && x.size(-1) == out.back() && c.size(-1) == out.back() &&
               s.size(-1) == out.back(),
           kShapeMismatch, "[", kOp, "] x ", shape_str(x.shape()), ", cos ", shape_str(c.shape()),
           " and sin ", shape_str(s.shape()), " must share an even last dim");
  return out;
}

}  // namespace rotary

void register_rotary_ops(Registry& r) {
  r.add_out(
      "rotary_embedding(Tensor x, Tensor cos, Tensor sin) -> Tensor",
      [](const Args& a) {
        return std::vector<Tensor>{Tensor::meta(
            rotary::result_shape(a), a[rotary::kX].as_tensor("rotary_embedding").dtype())};
      },
      nullptr);
  // A per-head RMSNorm and the rotary after it (fuse_head_norm_rotary; Qwen3's and Gemma 3's q
  // and k): rotary_embedding(upcast_rms_norm(x, weight, eps, weight_in_float), cos, sin), each
  // element rounded where those two steps round. x has the result's shape (cos and sin broadcast
  // into it) and the one dtype of cos and sin; the weight is x's dtype, or float32 with
  // weight_in_float. With weight2, the rows (heads) of x's dim -2 from `split` on take weight2
  // (a layer's q and k heads in one step, each with its own norm weight).
  r.add_out(
      "rms_norm_rotary(Tensor x, Tensor weight, float eps, bool weight_in_float, Tensor cos, "
      "Tensor sin, Tensor? weight2=None, int split=0, float weight_offset=0.0) -> Tensor",
      [](const Args& a) {
        const char* op = "rms_norm_rotary";
        const Tensor& x = a[0].as_tensor(op);
        nn::check_upcast_norm_weight(op, x, a, 1, 3, nn::kNormRotaryOffsetArg);
        if (a.size() > 6 && !a[6].is_none())
          nn::check_upcast_norm_weight(op, x, a, 6, 3, nn::kNormRotaryOffsetArg);
        if (a.size() > 6 && !a[6].is_none()) {
          const int64_t split = a.size() > 7 ? a[7].as_int(op) : 0;
          IP_CHECK(x.dim() >= 2 && split > 0 && split < x.size(-2), kInvalidArgument, "[", op,
                   "] split ", split, " must leave heads of x ", shape_str(x.shape()),
                   " (dim -2) to both weights");
        }
        const Shape out = rotary::result_shape({a[0], a[4], a[5]});
        IP_CHECK(out == x.shape(), kShapeMismatch, "[", op, "] cos and sin must broadcast into x ",
                 shape_str(x.shape()), ", the result is ", shape_str(out));
        return std::vector<Tensor>{Tensor::meta(out, x.dtype())};
      },
      nullptr);
}

}  // namespace inplace
