// Copies and casts: to (every overload), _to_copy, type_as, the float()/long()/... methods,
// copy / copy_, clone, lift_fresh_copy, contiguous, fill / fill_, zero / zero_, and the alias
// ops detach / alias / lift_fresh.
#include <optional>
#include <string>

#include "core/strided_loop.h"
#include "ops/elementwise_ops.h"

namespace inplace::elementwise {

namespace {

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

// self itself when nothing changes (torch's to() returns an alias then), else a new tensor.
Value converted(const Tensor& self, std::optional<DType> dtype, bool copy) {
  const DType t = dtype.value_or(self.dtype());
  if (t == self.dtype() && !copy) return Value::from_tensor(self);
  if (self.is_meta()) return Value::from_tensor(Tensor::meta(self.shape(), t));  // planning
  Tensor out = Tensor::empty(self.shape(), t);
  cpu::copy_cast(out, self);
  return Value::from_tensor(out);
}

void add_mutating(Registry& r, const std::string& schema, const std::string& functional,
                  EagerFn eager) {
  OpDef def;
  def.schema = Schema::parse(schema);
  def.kind = OpKind::kMutating;
  def.functional = functional;
  def.eager = std::move(eager);
  r.add(std::move(def));
}

void register_to(Registry& r) {
  // Overloads are tried in this order; the device is accepted and ignored (data stays put).
  r.add_eager(
      "to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, Device? "
      "device=None, bool? pin_memory=None, bool non_blocking=False, bool copy=False, "
      "MemoryFormat? memory_format=None) -> Tensor(a)",
      [](const Args& a) {
        return converted(a[0].as_tensor("to"), dtype_arg(a[1], "to"), a[6].as_bool("to"));
      });
  r.add_eager(
      "to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, bool "
      "copy=False, MemoryFormat? memory_format=None) -> Tensor(a)",
      [](const Args& a) {
        return converted(a[0].as_tensor("to"), dtype_arg(a[2], "to"), a[4].as_bool("to"));
      });
  r.add_eager(
      "to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, "
      "MemoryFormat? memory_format=None) -> Tensor(a)",
      [](const Args& a) {
        return converted(a[0].as_tensor("to"), dtype_arg(a[1], "to"), a[3].as_bool("to"));
      });
  r.add_eager(
      "to.other(Tensor(a) self, Tensor other, bool non_blocking=False, bool copy=False, "
      "MemoryFormat? memory_format=None) -> Tensor(a)",
      [](const Args& a) {
        return converted(a[0].as_tensor("to"), a[1].as_tensor("to").dtype(), a[3].as_bool("to"));
      });
  r.add_eager(
      "to.prim_Device(Tensor(a) self, Device? device, ScalarType? dtype=None, bool "
      "non_blocking=False, bool copy=False) -> Tensor(a)",
      [](const Args& a) {
        return converted(a[0].as_tensor("to"), dtype_arg(a[2], "to"), a[4].as_bool("to"));
      });

  r.add_out(
      "_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
      "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> "
      "Tensor",
      [](const Args& a) {
        const Tensor& self = a[0].as_tensor("_to_copy");
        return std::vector<Tensor>{
            Tensor::meta(self.shape(), dtype_arg(a[1], "_to_copy").value_or(self.dtype()))};
      },
      [](const Args& a, const std::vector<Tensor>& out) {
        cpu::copy_cast(out[0], a[0].as_tensor("_to_copy"));
      });

  // x.type(torch.float16) or x.type('torch.HalfTensor'): to() by another name.
  r.add_eager("type(Tensor(a) self, ScalarType? dtype=None, bool non_blocking=False) -> Tensor(a)",
              [](const Args& a) {
                IP_CHECK(!a[1].is_none(), kUnsupported,
                         "[type] x.type() without a dtype returns a type name; not supported");
                return converted(a[0].as_tensor("type"), legacy_type_arg(a[1]), false);
              });
  r.add_eager("type_as(Tensor self, Tensor other) -> Tensor", [](const Args& a) {
    return converted(a[0].as_tensor("type_as"), a[1].as_tensor("type_as").dtype(), false);
  });

  // x.float(), x.long(), ...: the Tensor methods FX records at torch level.
  const std::pair<const char*, DType> kMethods[] = {
      {"float", DType::kFloat32},     {"double", DType::kFloat64}, {"half", DType::kFloat16},
      {"bfloat16", DType::kBFloat16}, {"long", DType::kInt64},     {"int", DType::kInt32},
      {"short", DType::kInt16},       {"char", DType::kInt8},      {"byte", DType::kUInt8},
      {"bool", DType::kBool},
  };
  for (const auto& [name, dtype] : kMethods) {
    const DType t = dtype;
    const std::string n = name;
    r.add_eager(n + "(Tensor(a) self, MemoryFormat? memory_format=None) -> Tensor(a)",
                [t, n](const Args& a) { return converted(a[0].as_tensor(n.c_str()), t, false); });
  }
}

void register_copy(Registry& r) {
  // copy(self, src): src broadcast to self's shape and cast to self's dtype.
  auto copy_check = [](const Tensor& self, const Value& src, const char* op) {
    if (src.is_tensor())
      (void)broadcast_strides(src.tensor, self.shape(), op);
    else
      operand(src, op);
  };
  auto copy_into = [](const Tensor& dst, const Value& src) {
    if (src.is_tensor())
      cpu::copy_cast(dst, src.tensor);
    else
      cpu::fill(dst, src.as_scalar("copy"));
  };
  r.add_out(
      "copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor",
      [copy_check](const Args& a) {
        const Tensor& self = a[0].as_tensor("copy");
        copy_check(self, a[1], "copy");
        return std::vector<Tensor>{Tensor::meta(self.shape(), self.dtype())};
      },
      [copy_into](const Args& a, const std::vector<Tensor>& out) { copy_into(out[0], a[1]); });
  add_mutating(r, "copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
               "copy", [copy_check, copy_into](const Args& a) {
                 const Tensor& self = a[0].as_tensor("copy_");
                 copy_check(self, a[1], "copy_");
                 copy_into(self, a[1]);
                 return a[0];
               });

  auto same_meta = [](const char* op) {
    return [op](const Args& a) {
      const Tensor& self = a[0].as_tensor(op);
      return std::vector<Tensor>{Tensor::meta(self.shape(), self.dtype())};
    };
  };
  auto copy_self = [](const Args& a, const std::vector<Tensor>& out) {
    cpu::copy_cast(out[0], a[0].tensor);
  };
  r.add_out("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", same_meta("clone"),
            copy_self);
  r.add_out("lift_fresh_copy(Tensor self) -> Tensor", same_meta("lift_fresh_copy"), copy_self);
  // A view when already contiguous, else a copy: eager, like to().
  r.add_eager(
      "contiguous(Tensor(a) self, *, MemoryFormat? memory_format=contiguous_format) -> Tensor(a)",
      [](const Args& a) {
        const Tensor& self = a[0].as_tensor("contiguous");
        return self.is_contiguous() ? a[0] : converted(self, std::nullopt, true);
      });
  for (const char* name : {"detach", "alias", "lift_fresh"}) {
    const std::string n = name;
    r.add_view(n + "(Tensor(a) self) -> Tensor(a)", [n](const Args& a) {
      return Value::from_tensor(a[0].as_tensor(n.c_str()).alias());
    });
  }
}

void register_fill(Registry& r) {
  // fill.Tensor takes a 0-dim tensor; a number or 0-dim tensor reaches either overload.
  auto value_of = [](const Value& v, const char* op) {
    IP_CHECK(!v.is_tensor() || v.tensor.dim() == 0, kInvalidArgument, "[", op,
             "] only supports a 0-dimensional value tensor, but got tensor with shape ",
             shape_str(v.is_tensor() ? v.tensor.shape() : Shape{}));
    return v;
  };
  auto infer = [value_of](const Args& a) {
    const Tensor& self = a[0].as_tensor("fill");
    value_of(a[1], "fill");
    return std::vector<Tensor>{Tensor::meta(self.shape(), self.dtype())};
  };
  auto out = [](const Args& a, const std::vector<Tensor>& res) {
    cpu::fill(res[0], a[1].as_scalar("fill"));
  };
  r.add_out("fill.Scalar(Tensor self, Scalar value) -> Tensor", infer, out);
  r.add_out("fill.Tensor(Tensor self, Tensor value) -> Tensor", infer, out);
  for (const char* overload : {"Scalar", "Tensor"}) {
    const std::string ov = overload;
    add_mutating(r, "fill_." + ov + "(Tensor(a!) self, " + ov + " value) -> Tensor(a!)",
                 "fill." + ov, [value_of](const Args& a) {
                   const Tensor& self = a[0].as_tensor("fill_");
                   cpu::fill(self, value_of(a[1], "fill_").as_scalar("fill_"));
                   return a[0];
                 });
  }
  r.add_out(
      "zero(Tensor self) -> Tensor",
      [](const Args& a) {
        const Tensor& self = a[0].as_tensor("zero");
        return std::vector<Tensor>{Tensor::meta(self.shape(), self.dtype())};
      },
      [](const Args&, const std::vector<Tensor>& res) { cpu::fill(res[0], Scalar(0)); });
  add_mutating(r, "zero_(Tensor(a!) self) -> Tensor(a!)", "zero", [](const Args& a) {
    cpu::fill(a[0].as_tensor("zero_"), Scalar(0));
    return a[0];
  });
}

}  // namespace

void register_copy_ops(Registry& r) {
  register_to(r);
  register_copy(r);
  register_fill(r);
  r.tag({"clone", "lift_fresh_copy", "_to_copy"}, kPointwise);
  r.tag({"fill", "zero", "copy"}, kScatterLike);
}

}  // namespace inplace::elementwise
