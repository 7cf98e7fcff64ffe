// rotary_embedding(x, cos, sin): x * cos + rotate_half(x) * sin in one step (float32), what the
// fuse_rotary pass rewrites Hugging Face's apply_rotary_pos_emb chain into.
#include "core/error.h"
#include "ops/registry.h"
#include "ops/rotary_args.h"

namespace inplace {

namespace rotary {

namespace {
constexpr const char* kOp = "rotary_embedding";
}  // namespace

Shape result_shape(const Args& a) {
  const Tensor& x = a[kX].as_tensor(kOp);
  const Tensor& c = a[kCos].as_tensor(kOp);
  const Tensor& s = a[kSin].as_tensor(kOp);
  for (const Tensor* t : {&x, &c, &s})
    IP_CHECK(t->dtype() == DType::kFloat32 && t->dim() >= 1, kDTypeMismatch, "[", kOp,
             "] expects float32 tensors of at least one dim, got ", dtype_name(t->dtype()), " ",
             shape_str(t->shape()));
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
        return std::vector<Tensor>{Tensor::meta(rotary::result_shape(a), DType::kFloat32)};
      },
      nullptr);
}

}  // namespace inplace
