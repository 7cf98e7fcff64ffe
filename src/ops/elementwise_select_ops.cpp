// Selection ops: where, clamp / clamp_min / clamp_max (number or tensor bounds), masked_fill.
#include <optional>
#include <string>

#include "ops/elementwise_ops.h"

namespace inplace::elementwise {

namespace {

// ---- where(condition, self, other)

const Tensor& condition(const Value& v, const char* op) {
  const Tensor& c = v.as_tensor(op);
  IP_CHECK(c.dtype() == DType::kBool || c.dtype() == DType::kUInt8, kDTypeMismatch, "[", op,
           "] expected condition to be a boolean tensor, but got a tensor with dtype ",
           dtype_name(c.dtype()));
  return c;
}

void register_where(Registry& r) {
  auto infer = [](const Args& args) {
    const Operand c(condition(args[0], "where"));
    const Operand a = operand(args[1], "where"), b = operand(args[2], "where");
    return std::vector<Tensor>{
        Tensor::meta(broadcast_shape({&c, &a, &b}, "where"), result_type({&a, &b}))};
  };
  r.add_out("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor", infer, nullptr);
  r.add_out("where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor", infer,
            nullptr);
  r.add_out("where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor", infer,
            nullptr);
  r.add_out("where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor", infer, nullptr);
}

// ---- clamp(self, min, max)

struct Clamp : ClampArgs {
  Shape shape;
  DType dtype = DType::kFloat32;
};

// lo_index / hi_index: argument positions, -1 when the op has no such bound.
Clamp bind_clamp(const Args& args, const char* op, int lo_index, int hi_index) {
  Clamp c;
  static_cast<ClampArgs&>(c) = clamp_args(args, op, lo_index, hi_index);
  IP_CHECK(c.lo || c.hi, kInvalidArgument, "[", op,
           "] at least one of 'min' or 'max' must not be None");
  // A missing bound is stood in for by self, which changes neither shape nor dtype.
  const Operand* lo = c.lo ? &*c.lo : &c.self;
  const Operand* hi = c.hi ? &*c.hi : &c.self;
  c.shape = broadcast_shape({&c.self, lo, hi}, op);
  // Number bounds never change a floating self's dtype; otherwise torch promotes over all.
  const bool tensor_bounds = (c.lo && c.lo->is_tensor()) || (c.hi && c.hi->is_tensor());
  const DType self_dtype = c.self.tensor.dtype();
  c.dtype =
      (!tensor_bounds && is_floating(self_dtype)) ? self_dtype : result_type({&c.self, lo, hi});
  return c;
}

void add_clamp(Registry& r, const std::string& schema, const char* op, int lo_index, int hi_index) {
  r.add_out(
      schema,
      [=](const Args& args) {
        Clamp c = bind_clamp(args, op, lo_index, hi_index);
        return std::vector<Tensor>{Tensor::meta(c.shape, c.dtype)};
      },
      nullptr);
}

void register_clamp(Registry& r) {
  add_clamp(r, "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", "clamp", 1, 2);
  add_clamp(r, "clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor", "clamp",
            1, 2);
  r.add_inplace("clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)",
                "clamp");
  r.add_inplace("clamp_.Tensor(Tensor(a!) self, Tensor? min=None, Tensor? max=None) -> Tensor(a!)",
                "clamp.Tensor");
  add_clamp(r, "clamp_min(Tensor self, Scalar min) -> Tensor", "clamp_min", 1, -1);
  add_clamp(r, "clamp_min.Tensor(Tensor self, Tensor min) -> Tensor", "clamp_min", 1, -1);
  r.add_inplace("clamp_min_(Tensor(a!) self, Scalar min) -> Tensor(a!)", "clamp_min");
  r.add_inplace("clamp_min_.Tensor(Tensor(a!) self, Tensor min) -> Tensor(a!)", "clamp_min.Tensor");
  add_clamp(r, "clamp_max(Tensor self, Scalar max) -> Tensor", "clamp_max", -1, 1);
  add_clamp(r, "clamp_max.Tensor(Tensor self, Tensor max) -> Tensor", "clamp_max", -1, 1);
  r.add_inplace("clamp_max_(Tensor(a!) self, Scalar max) -> Tensor(a!)", "clamp_max");
  r.add_inplace("clamp_max_.Tensor(Tensor(a!) self, Tensor max) -> Tensor(a!)", "clamp_max.Tensor");
  r.add_alias("clip", "clamp");
  r.add_alias("clip_", "clamp_");
}

// ---- masked_fill(self, mask, value)

void register_masked_fill(Registry& r) {
  auto infer = [](const Args& args) {
    const Tensor& self = args[0].as_tensor("masked_fill");
    const Tensor& mask = args[1].as_tensor("masked_fill");
    IP_CHECK(mask.dtype() == DType::kBool, kDTypeMismatch,
             "[masked_fill] only supports boolean masks, but got mask with dtype ",
             dtype_name(mask.dtype()));
    const Value& v = args[2];
    IP_CHECK(!v.is_tensor() || v.tensor.dim() == 0, kInvalidArgument,
             "[masked_fill] only supports a 0-dimensional value tensor, but got tensor with "
             "shape ",
             shape_str(v.is_tensor() ? v.tensor.shape() : Shape{}));
    return std::vector<Tensor>{
        Tensor::meta(broadcast_shapes(self.shape(), mask.shape(), "masked_fill"), self.dtype())};
  };
  r.add_out("masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor", infer, nullptr);
  r.add_out("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor", infer, nullptr);
  r.add_inplace("masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)",
                "masked_fill.Scalar");
  r.add_inplace("masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)",
                "masked_fill.Tensor");
}

}  // namespace

void register_select_ops(Registry& r) {
  register_where(r);
  register_clamp(r);
  register_masked_fill(r);
  r.tag({"clamp", "clamp_min", "clamp_max", "where", "masked_fill"}, kPointwise);
  r.tag({"masked_fill"}, kScatterLike);
}

}  // namespace inplace::elementwise
