// Copies and casts: to (every overload), _to_copy, type_as, the float()/long()/... methods,
// copy / copy_, clone, lift_fresh_copy, contiguous, fill / fill_, zero / zero_, and the alias
// ops detach / alias / lift_fresh.
#include <optional>
#include <string>

#include "core/strided_loop.h"
#include "ops/elementwise_ops.h"
#include "ops/indexing_ops.h"

namespace inplace::elementwise {

namespace {

using indexing::add_mutating;  // a mutating op whose eager writes self directly

// A dtype argument: None, a dtype, or (x.to("cpu") binds to.dtype) a device string.
std::optional<DType> dtype_arg(const Value& v, const char* op) {
  if (v.is_none()) return std::nullopt;
  if (v.kind == Value::Kind::kString) {
    DType t;
    if (parse_dtype(v.s, &t)) return t;
    for (const char* device : {"cpu", "cuda", "meta", "mps", "xpu"})
      if (v.s.rfind(device, 0) == 0) return std::nullopt;
    IP_FAIL(kInvalidArgument, "[", op, "] unknown dtype or device '", v.s, "'");
  }
  return v.as_dtype(op);
}

// x.type() also takes the legacy tensor type names: 'torch.FloatTensor', 'torch.cuda.HalfTensor'.
DType legacy_type_arg(const Value& v) {
  if (v.kind == Value::Kind::kString) {
    static const std::pair<const char*, DType> kNames[] = {
        {"FloatTensor", DType::kFloat32}, {"DoubleTensor", DType::kFloat64},
        {"HalfTensor", DType::kFloat16},  {"BFloat16Tensor", DType::kBFloat16},
        {"LongTensor", DType::kInt64},    {"IntTensor", DType::kInt32},
        {"ShortTensor", DType::kInt16},   {"CharTensor", DType::kInt8},
        {"ByteTensor", DType::kUInt8},    {"BoolTensor", DType::kBool},
    };
    const size_t dot = v.s.rfind('.');
    const std::string base = dot == std::string::npos ? v.s : v.s.substr(dot + 1);
    for (const auto& [name, t] : kNames)
      if (base == name) return t;
  }
  return v.as_dtype("type");
}

// A cast eagerly: self itself when nothing changes (torch's to() returns an alias then), a meta
// when planning, else a new tensor converted by core's element conversion (Tensor::copy_from,
// the same conversion as every backend's copy kernel).
Value converted(const Tensor& self, DType t, bool copy) {
  if (t == self.dtype() && !copy) return Value::from_tensor(self);
  if (self.is_meta()) return Value::from_tensor(Tensor::meta(self.shape(), t));  // planning
  Tensor out = Tensor::empty(self.shape(), t);
  out.copy_from(self);
  return Value::from_tensor(out);
}

void add_cast(Registry& r, const std::string& schema) {
  OpDef def;
  def.schema = Schema::parse(schema);
  const std::string name = def.schema.name, overload = def.schema.overload;
  def.eager = [name, overload](const Args& a) {
    const CastArgs c = cast_args(name, overload, a);
    return converted(c.self, c.dtype, c.copy);
  };
  r.add(std::move(def));
}

void register_to(Registry& r) {
  // Overloads are tried in this order; the device is accepted and ignored (data stays put).
  add_cast(
      r,
      "to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, Device? "
      "device=None, bool? pin_memory=None, bool non_blocking=False, bool copy=False, "
      "MemoryFormat? memory_format=None) -> Tensor(a)");
  add_cast(
      r,
      "to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, bool "
      "copy=False, MemoryFormat? memory_format=None) -> Tensor(a)");
  add_cast(r,
           "to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, "
           "MemoryFormat? memory_format=None) -> Tensor(a)");
  add_cast(r,
           "to.other(Tensor(a) self, Tensor other, bool non_blocking=False, bool copy=False, "
           "MemoryFormat? memory_format=None) -> Tensor(a)");
  add_cast(r,
           "to.prim_Device(Tensor(a) self, Device? device, ScalarType? dtype=None, bool "
           "non_blocking=False, bool copy=False) -> Tensor(a)");

  r.add_out(
      "_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
      "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> "
      "Tensor",
      [](const Args& a) {
        const Tensor& self = a[0].as_tensor("_to_copy");
        return std::vector<Tensor>{
            Tensor::meta(self.shape(), dtype_arg(a[1], "_to_copy").value_or(self.dtype()))};
      },
      nullptr);

  // x.type(torch.float16) or x.type('torch.HalfTensor'): to() by another name.
  add_cast(r, "type(Tensor(a) self, ScalarType? dtype=None, bool non_blocking=False) -> Tensor(a)");
  add_cast(r, "type_as(Tensor self, Tensor other) -> Tensor");

  // x.float(), x.long(), ...: the Tensor methods FX records at torch level.
  for (const char* name : kCastOps) {
    const std::string n = name;
    if (n == "to" || n == "type" || n == "type_as") continue;
    add_cast(r, n + "(Tensor(a) self, MemoryFormat? memory_format=None) -> Tensor(a)");
  }
}

void register_copy(Registry& r) {
  // copy(self, src): src broadcast to self's shape and cast to self's dtype.
  r.add_out(
      "copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor",
      [](const Args& a) {
        const Tensor& self = a[0].as_tensor("copy");
        check_copy_src(self, a[1], "copy");
        return std::vector<Tensor>{Tensor::meta(self.shape(), self.dtype())};
      },
      nullptr);
  // copy_ / fill_ / zero_ write self directly (no result to plan): eager kernels of each backend.
  add_mutating(r, "copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
               "copy", nullptr);

  auto same_meta = [](const char* op) {
    return [op](const Args& a) {
      const Tensor& self = a[0].as_tensor(op);
      return std::vector<Tensor>{Tensor::meta(self.shape(), self.dtype())};
    };
  };
  r.add_out("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", same_meta("clone"),
            nullptr);
  r.add_out("lift_fresh_copy(Tensor self) -> Tensor", same_meta("lift_fresh_copy"), nullptr);
  // A view when already contiguous, else a copy: eager, like to().
  r.add_eager(
      "contiguous(Tensor(a) self, *, MemoryFormat? memory_format=contiguous_format) -> Tensor(a)",
      [](const Args& a) {
        const Tensor& self = a[0].as_tensor("contiguous");
        return self.is_contiguous() ? a[0] : converted(self, self.dtype(), true);
      });
  for (const char* name : {"detach", "alias", "lift_fresh"}) {
    const std::string n = name;
    r.add_view(n + "(Tensor(a) self) -> Tensor(a)", [n](const Args& a) {
      return Value::from_tensor(a[0].as_tensor(n.c_str()).alias());
    });
  }
}

void register_fill(Registry& r) {
  auto infer = [](const Args& a) {
    const Tensor& self = a[0].as_tensor("fill");
    fill_value(a[1], "fill");
    return std::vector<Tensor>{Tensor::meta(self.shape(), self.dtype())};
  };
  r.add_out("fill.Scalar(Tensor self, Scalar value) -> Tensor", infer, nullptr);
  r.add_out("fill.Tensor(Tensor self, Tensor value) -> Tensor", infer, nullptr);
  for (const char* overload : {"Scalar", "Tensor"}) {
    const std::string ov = overload;
    add_mutating(r, "fill_." + ov + "(Tensor(a!) self, " + ov + " value) -> Tensor(a!)",
                 "fill." + ov, nullptr);
  }
  r.add_out(
      "zero(Tensor self) -> Tensor",
      [](const Args& a) {
        const Tensor& self = a[0].as_tensor("zero");
        return std::vector<Tensor>{Tensor::meta(self.shape(), self.dtype())};
      },
      nullptr);
  add_mutating(r, "zero_(Tensor(a!) self) -> Tensor(a!)", "zero", nullptr);
}

}  // namespace

void check_copy_src(const Tensor& self, const Value& src, const char* op) {
  if (src.is_tensor())
    (void)broadcast_strides(src.tensor, self.shape(), op);
  else
    operand(src, op);
}

const Value& fill_value(const Value& v, const char* op) {
  IP_CHECK(!v.is_tensor() || v.tensor.dim() == 0, kInvalidArgument, "[", op,
           "] only supports a 0-dimensional value tensor, but got tensor with shape ",
           shape_str(v.is_tensor() ? v.tensor.shape() : Shape{}));
  return v;
}

CastArgs cast_args(const std::string& op, const std::string& overload, const Args& a) {
  const char* name = op.c_str();
  CastArgs c;
  c.self = a[0].as_tensor(name);
  std::optional<DType> t;
  if (op == "to") {
    if (overload == "dtype_layout") {
      t = dtype_arg(a[1], name);
      c.copy = a[6].as_bool(name);
    } else if (overload == "device") {
      t = dtype_arg(a[2], name);
      c.copy = a[4].as_bool(name);
    } else if (overload == "dtype") {
      t = dtype_arg(a[1], name);
      c.copy = a[3].as_bool(name);
    } else if (overload == "other") {
      t = a[1].as_tensor(name).dtype();
      c.copy = a[3].as_bool(name);
    } else {  // prim_Device
      t = dtype_arg(a[2], name);
      c.copy = a[4].as_bool(name);
    }
  } else if (op == "type") {
    IP_CHECK(!a[1].is_none(), kUnsupported,
             "[type] x.type() without a dtype returns a type name; not supported");
    t = legacy_type_arg(a[1]);
  } else if (op == "type_as") {
    t = a[1].as_tensor(name).dtype();
  } else {
    static const std::pair<const char*, DType> kMethods[] = {
        {"float", DType::kFloat32},     {"double", DType::kFloat64}, {"half", DType::kFloat16},
        {"bfloat16", DType::kBFloat16}, {"long", DType::kInt64},     {"int", DType::kInt32},
        {"short", DType::kInt16},       {"char", DType::kInt8},      {"byte", DType::kUInt8},
        {"bool", DType::kBool},
    };
    for (const auto& [n, dtype] : kMethods)
      if (op == n) t = dtype;
    IP_ASSERT(t.has_value(), "cast_args decodes every cast op");
  }
  c.dtype = t.value_or(c.self.dtype());
  return c;
}

void register_copy_ops(Registry& r) {
  register_to(r);
  register_copy(r);
  register_fill(r);
  r.tag({"clone", "lift_fresh_copy", "_to_copy"}, kPointwise);
  r.tag({"fill", "zero", "copy"}, kScatterLike);
}

}  // namespace inplace::elementwise
