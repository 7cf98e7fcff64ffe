// rotary_embedding(x, cos, sin): x * cos + rotate_half(x) * sin in one step (float32), what the
// fuse_rotary pass rewrites Hugging Face's apply_rotary_pos_emb chain into.
#include "core/error.h"
#include "kernels/cpu/rotary.h"
#include "ops/registry.h"

namespace inplace {

namespace {

constexpr const char* kOp = "rotary_embedding";

Shape check(const Args& a) {
  const Tensor& x = a[0].as_tensor(kOp);
  const Tensor& c = a[1].as_tensor(kOp);
  const Tensor& s = a[2].as_tensor(kOp);
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

}  // namespace

void register_rotary_ops(Registry& r) {
  r.add_out(
      "rotary_embedding(Tensor x, Tensor cos, Tensor sin) -> Tensor",
      [](const Args& a) { return std::vector<Tensor>{Tensor::meta(check(a), DType::kFloat32)}; },
      [](const Args& a, const std::vector<Tensor>& out) {
        check(a);
        cpu::rotary_embedding(a[0].tensor, a[1].tensor, a[2].tensor, out[0]);
      });
}

}  // namespace inplace
