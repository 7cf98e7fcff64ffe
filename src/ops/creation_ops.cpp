// Tensor factories (zeros, full, arange, *_like, new_*) and tensor-assembling ops (cat, stack,
// repeat, roll, flip, tril, triu). All have static shapes, so all are add_out ops.
#include <cmath>
#include <limits>

#include "kernels/cpu/creation.h"
#include "kernels/cpu/movement.h"
#include "ops/registry.h"

namespace inplace {

namespace {

// Factory keywords torch accepts; only dtype means anything on CPU. requires_grad is not in
// aten's schemas but torch-level graphs pass it.
#define IP_FACTORY_KW                                                                         \
  "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, " \
  "bool? requires_grad=None"
#define IP_LIKE_KW IP_FACTORY_KW ", MemoryFormat? memory_format=None"

const Tensor& tensor_arg(const Args& a, size_t i, const char* op) {
  return a[i].as_tensor(op);
}

DType dtype_or(const Value& v, DType fallback, const char* op) {
  return v.is_none() ? fallback : v.as_dtype(op);
}

Shape size_arg(const Value& v, const char* op) {
  Shape s = v.as_int_list(op);
  for (int64_t d : s)
    IP_CHECK(d >= 0, kInvalidArgument, "[", op, "] negative dimension ", d, " in size ",
             shape_str(s));
  return s;
}

std::vector<Tensor> tensor_list(const Value& v, const char* op) {
  IP_CHECK(v.is_sequence(), kInvalidArgument, "[", op, "] expected a list of tensors, got ",
           v.kind_name());
  std::vector<Tensor> out;
  for (const Value& x : v.items) out.push_back(x.as_tensor(op));
  return out;
}

DType promoted_dtype(const std::vector<Tensor>& ts) {
  DType d = ts[0].dtype();
  for (const Tensor& t : ts) d = promote_types(d, t.dtype());
  return d;
}

std::vector<Tensor> one(const Shape& shape, DType dtype) {
  return {Tensor::meta(shape, dtype)};
}

// A factory of `shape_of(args)` and `dtype_of(args)` filled with `fill_of(args)`.
template <typename ShapeOf, typename DTypeOf, typename FillOf>
void add_filled(Registry& r, const std::string& schema, ShapeOf shape_of, DTypeOf dtype_of,
                FillOf fill_of) {
  r.add_out(
      schema, [=](const Args& a) { return one(shape_of(a), dtype_of(a)); },
      [=](const Args& a, const std::vector<Tensor>& out) { out[0].fill(fill_of(a)); });
}

void register_factories(Registry& r) {
  // zeros / ones / empty (empty is zero-filled: deterministic, and cheap next to the rest).
  struct Sized {
    const char* name;
    const char* overload;
    int64_t value;
  };
  const Sized kSized[] = {{"zeros", "", 0}, {"ones", "", 1}, {"empty", ".memory_format", 0}};
  for (const Sized& op : kSized) {
    const bool is_empty = std::string(op.name) == "empty";
    std::string schema = std::string(op.name) + op.overload + "(SymInt[] size, *, " IP_FACTORY_KW +
                         (is_empty ? ", MemoryFormat? memory_format=None" : "") + ") -> Tensor";
    const char* n = op.name;
    int64_t v = op.value;
    add_filled(
        r, schema, [n](const Args& a) { return size_arg(a[0], n); },
        [n](const Args& a) { return dtype_or(a[1], DType::kFloat32, n); },
        [v](const Args&) { return Scalar(v); });
  }
  add_filled(
      r, "full(SymInt[] size, Scalar fill_value, *, " IP_FACTORY_KW ") -> Tensor",
      [](const Args& a) { return size_arg(a[0], "full"); },
      [](const Args& a) { return dtype_or(a[2], a[1].as_scalar("full").default_dtype(), "full"); },
      [](const Args& a) { return a[1].as_scalar("full"); });
  add_filled(
      r, "scalar_tensor(Scalar s, *, " IP_FACTORY_KW ") -> Tensor",
      [](const Args&) { return Shape{}; },
      [](const Args& a) { return dtype_or(a[1], DType::kFloat32, "scalar_tensor"); },
      [](const Args& a) { return a[0].as_scalar("scalar_tensor"); });

  // *_like: self's shape and dtype.
  const std::pair<const char*, int> kLike[] = {
      {"zeros_like", 0}, {"ones_like", 1}, {"empty_like", 0}};
  for (const auto& [name, value] : kLike) {
    const char* n = name;
    int64_t v = value;
    add_filled(
        r, std::string(n) + "(Tensor self, *, " IP_LIKE_KW ") -> Tensor",
        [n](const Args& a) { return tensor_arg(a, 0, n).shape(); },
        [n](const Args& a) { return dtype_or(a[1], tensor_arg(a, 0, n).dtype(), n); },
        [v](const Args&) { return Scalar(v); });
  }
  add_filled(
      r, "full_like(Tensor self, Scalar fill_value, *, " IP_LIKE_KW ") -> Tensor",
      [](const Args& a) { return tensor_arg(a, 0, "full_like").shape(); },
      [](const Args& a) {
        return dtype_or(a[2], tensor_arg(a, 0, "full_like").dtype(), "full_like");
      },
      [](const Args& a) { return a[1].as_scalar("full_like"); });

  // new_*: a given size with self's dtype.
  const std::pair<const char*, int> kNew[] = {{"new_zeros", 0}, {"new_ones", 1}, {"new_empty", 0}};
  for (const auto& [name, value] : kNew) {
    const char* n = name;
    int64_t v = value;
    add_filled(
        r, std::string(n) + "(Tensor self, SymInt[] size, *, " IP_FACTORY_KW ") -> Tensor",
        [n](const Args& a) { return size_arg(a[1], n); },
        [n](const Args& a) { return dtype_or(a[2], tensor_arg(a, 0, n).dtype(), n); },
        [v](const Args&) { return Scalar(v); });
  }
  add_filled(
      r, "new_full(Tensor self, SymInt[] size, Scalar fill_value, *, " IP_FACTORY_KW ") -> Tensor",
      [](const Args& a) { return size_arg(a[1], "new_full"); },
      [](const Args& a) {
        return dtype_or(a[3], tensor_arg(a, 0, "new_full").dtype(), "new_full");
      },
      [](const Args& a) { return a[2].as_scalar("new_full"); });
}

// ---------------------------------------------------------------- arange

struct ArangeSpec {
  Scalar start, end, step;
  DType dtype;
  int64_t size;
};

ArangeSpec arange_spec(Scalar start, Scalar end, Scalar step, const Value& dtype) {
  ArangeSpec s{start, end, step, DType::kInt64, 0};
  const bool any_float = start.is_float() || end.is_float() || step.is_float();
  s.dtype = dtype_or(dtype, any_float ? DType::kFloat32 : DType::kInt64, "arange");
  IP_CHECK(s.dtype != DType::kBool, kUnsupported, "[arange] dtype bool is not supported");
  // Integral results step in int64, so a fractional step truncates first (as torch).
  if (!is_floating(s.dtype)) s.step = Scalar(step.to_int());
  const double a = start.to_double(), b = end.to_double(), st = s.step.to_double();
  IP_CHECK(std::isfinite(a) && std::isfinite(b), kInvalidArgument, "[arange] unsupported range ",
           start.to_string(), " -> ", end.to_string());
  IP_CHECK(st != 0, kInvalidArgument, "[arange] step must be nonzero");
  IP_CHECK((st > 0 && b >= a) || (st < 0 && b <= a), kInvalidArgument, "[arange] upper bound ",
           end.to_string(), " and lower bound ", start.to_string(),
           " are inconsistent with step sign ", s.step.to_string());
  if (!any_float) {
    // Exact integer ceil((end - start) / step), as torch computes it for int64.
    const __int128 i0 = start.to_int(), i1 = end.to_int(), is = s.step.to_int();
    const __int128 sgn = is > 0 ? 1 : -1;
    const __int128 n = (i1 - i0 + is - sgn) / is;  // 128-bit: no overflow at int64 extremes
    IP_CHECK(n < static_cast<__int128>(std::numeric_limits<int64_t>::max()), kInvalidArgument,
             "[arange] invalid size, possible overflow");
    s.size = static_cast<int64_t>(n);
  } else {
    const double n = std::ceil((b - a) / st);
    IP_CHECK(n >= 0 && n < static_cast<double>(std::numeric_limits<int64_t>::max()),
             kInvalidArgument, "[arange] invalid size ", n, ", possible overflow");
    s.size = static_cast<int64_t>(n);
  }
  return s;
}

void register_arange(Registry& r) {
  auto add = [&r](const std::string& schema, auto spec_of) {
    r.add_out(
        schema,
        [spec_of](const Args& a) {
          ArangeSpec s = spec_of(a);
          return one({s.size}, s.dtype);
        },
        [spec_of](const Args& a, const std::vector<Tensor>& out) {
          ArangeSpec s = spec_of(a);
          cpu::arange(out[0], s.start, s.step);
        });
  };
  // Tried in this order: the first whose positional count fits wins.
  add("arange(Scalar end, *, " IP_FACTORY_KW ") -> Tensor", [](const Args& a) {
    return arange_spec(Scalar(int64_t{0}), a[0].as_scalar("arange"), Scalar(int64_t{1}), a[1]);
  });
  add("arange.start(Scalar start, Scalar end, *, " IP_FACTORY_KW ") -> Tensor", [](const Args& a) {
    return arange_spec(a[0].as_scalar("arange"), a[1].as_scalar("arange"), Scalar(int64_t{1}),
                       a[2]);
  });
  add("arange.start_step(Scalar start, Scalar end, Scalar step=1, *, " IP_FACTORY_KW ") -> Tensor",
      [](const Args& a) {
        return arange_spec(a[0].as_scalar("arange"), a[1].as_scalar("arange"),
                           a[2].as_scalar("arange"), a[3]);
      });
}

// ---------------------------------------------------------------- cat / stack

bool is_legacy_empty(const Tensor& t) {
  return t.dim() == 1 && t.shape()[0] == 0;
}

struct CatSpec {
  std::vector<Tensor> inputs;
  int64_t dim = 0;
  Shape shape;
  DType dtype;
};

// torch.cat's checks: 1-D empty tensors are skipped (but still promote the dtype); every other
// tensor matches the first non-skipped one except along `dim`.
CatSpec cat_spec(const Args& a) {
  CatSpec s;
  s.inputs = tensor_list(a[0], "cat");
  IP_CHECK(!s.inputs.empty(), kInvalidArgument, "[cat] expected a non-empty list of tensors");
  s.dtype = promoted_dtype(s.inputs);
  int64_t dim = a[1].as_int("cat");
  const Tensor* ref = nullptr;
  size_t ref_index = 0;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    const Tensor& t = s.inputs[i];
    IP_CHECK(t.dim() > 0, kShapeMismatch, "[cat] zero-dimensional tensor (at position ", i,
             ") cannot be concatenated");
    if (!ref && !is_legacy_empty(t)) ref = &t, ref_index = i;
  }
  if (!ref) {
    s.shape = {0};
    return s;
  }
  s.dim = wrap_dim(dim, ref->dim(), "cat");
  s.shape = ref->shape();
  s.shape[s.dim] = 0;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    const Tensor& t = s.inputs[i];
    if (is_legacy_empty(t)) continue;
    bool match = t.dim() == ref->dim();
    for (int64_t d = 0; match && d < t.dim(); ++d)
      match = d == s.dim || t.shape()[d] == ref->shape()[d];
    IP_CHECK(match, kShapeMismatch, "[cat] tensor ", i, " has shape ", shape_str(t.shape()),
             " but tensor ", ref_index, " has shape ", shape_str(ref->shape()),
             ": sizes must match except in dim ", s.dim);
    s.shape[s.dim] += t.shape()[s.dim];
  }
  return s;
}

struct StackSpec {
  std::vector<Tensor> inputs;
  int64_t dim = 0;
  Shape shape;
  DType dtype;
};

StackSpec stack_spec(const Args& a) {
  StackSpec s;
  s.inputs = tensor_list(a[0], "stack");
  IP_CHECK(!s.inputs.empty(), kInvalidArgument, "[stack] expected a non-empty list of tensors");
  const Tensor& first = s.inputs[0];
  for (size_t i = 1; i < s.inputs.size(); ++i)
    IP_CHECK(s.inputs[i].shape() == first.shape(), kShapeMismatch,
             "[stack] expects each tensor to be equal size, but got ", shape_str(first.shape()),
             " at entry 0 and ", shape_str(s.inputs[i].shape()), " at entry ", i);
  s.dim = wrap_dim(a[1].as_int("stack"), first.dim() + 1, "stack");
  s.shape = first.shape();
  s.shape.insert(s.shape.begin() + s.dim, static_cast<int64_t>(s.inputs.size()));
  s.dtype = promoted_dtype(s.inputs);
  return s;
}

void register_cat_stack(Registry& r) {
  r.add_out(
      "cat(Tensor[] tensors, int dim=0) -> Tensor",
      [](const Args& a) {
        CatSpec s = cat_spec(a);
        return one(s.shape, s.dtype);
      },
      [](const Args& a, const std::vector<Tensor>& out) {
        CatSpec s = cat_spec(a);
        cpu::cat(s.inputs, s.dim, out[0]);
      });
  r.add_alias("concat", "cat");
  r.add_alias("concatenate", "cat");
  r.add_out(
      "stack(Tensor[] tensors, int dim=0) -> Tensor",
      [](const Args& a) {
        StackSpec s = stack_spec(a);
        return one(s.shape, s.dtype);
      },
      [](const Args& a, const std::vector<Tensor>& out) {
        StackSpec s = stack_spec(a);
        cpu::stack(s.inputs, s.dim, out[0]);
      });
}

// ---------------------------------------------------------------- repeat / roll / flip

Shape repeat_shape(const Tensor& self, const std::vector<int64_t>& repeats) {
  IP_CHECK(static_cast<int64_t>(repeats.size()) >= self.dim(), kInvalidArgument,
           "[repeat] number of repeat dims ", shape_str(repeats),
           " can not be smaller than the number of dims of the tensor ", shape_str(self.shape()));
  Shape out(repeats.size());
  const size_t lead = repeats.size() - static_cast<size_t>(self.dim());
  for (size_t i = 0; i < repeats.size(); ++i) {
    IP_CHECK(repeats[i] >= 0, kInvalidArgument, "[repeat] negative repeat ", repeats[i], " in ",
             shape_str(repeats));
    IP_CHECK(!__builtin_mul_overflow(repeats[i], i < lead ? 1 : self.shape()[i - lead], &out[i]),
             kOutOfRange, "[repeat] repeats ", shape_str(repeats), " of ", shape_str(self.shape()),
             " overflow int64");
  }
  numel_of(out);  // refuses a total that overflows
  return out;
}

// Wrapped roll dims; empty dims (roll the flattened tensor) needs exactly one shift.
std::vector<int64_t> roll_dims(const Tensor& self, const std::vector<int64_t>& shifts,
                               const std::vector<int64_t>& dims) {
  IP_CHECK(!shifts.empty(), kInvalidArgument, "[roll] shifts required");
  IP_CHECK(shifts.size() == dims.size() || (dims.empty() && shifts.size() == 1), kInvalidArgument,
           "[roll] shifts ", shape_str(shifts), " and dims ", shape_str(dims), " must align");
  IP_CHECK(self.dim() > 0 || dims.empty(), kOutOfRange, "[roll] dims ", shape_str(dims),
           " given for a 0-dim tensor");  // as torch; without dims a scalar rolls to itself
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(wrap_dim(d, self.dim(), "roll"));
  return out;
}

std::vector<int64_t> flip_dims(const Tensor& self, const std::vector<int64_t>& dims) {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(self.dim(), 1)), false);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, self.dim(), "flip");
    IP_CHECK(!seen[w], kInvalidArgument, "[flip] dim ", w, " appears multiple times in dims ",
             shape_str(dims));
    seen[w] = true;
    if (self.dim() > 0) out.push_back(w);  // a 0-dim tensor has nothing to reverse
  }
  return out;
}

void register_movement(Registry& r) {
  r.add_out(
      "repeat(Tensor self, SymInt[] repeats) -> Tensor",
      [](const Args& a) {
        const Tensor& self = tensor_arg(a, 0, "repeat");
        return one(repeat_shape(self, a[1].as_int_list("repeat")), self.dtype());
      },
      [](const Args& a, const std::vector<Tensor>& out) {
        cpu::repeat(tensor_arg(a, 0, "repeat"), a[1].as_int_list("repeat"), out[0]);
      });
  r.add_out(
      "roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor",
      [](const Args& a) {
        const Tensor& self = tensor_arg(a, 0, "roll");
        roll_dims(self, a[1].as_int_list("roll"), a[2].as_int_list("roll"));
        return one(self.shape(), self.dtype());
      },
      [](const Args& a, const std::vector<Tensor>& out) {
        const Tensor& self = tensor_arg(a, 0, "roll");
        std::vector<int64_t> shifts = a[1].as_int_list("roll");
        std::vector<int64_t> dims = roll_dims(self, shifts, a[2].as_int_list("roll"));
        if (dims.empty()) {
          // torch rolls the flattened tensor and restores the shape.
          cpu::roll(self.reshape({-1}), shifts, {0}, out[0].view({-1}));
        } else {
          cpu::roll(self, shifts, dims, out[0]);
        }
      });
  r.add_out(
      "flip(Tensor self, int[] dims) -> Tensor",
      [](const Args& a) {
        const Tensor& self = tensor_arg(a, 0, "flip");
        flip_dims(self, a[1].as_int_list("flip"));
        return one(self.shape(), self.dtype());
      },
      [](const Args& a, const std::vector<Tensor>& out) {
        const Tensor& self = tensor_arg(a, 0, "flip");
        cpu::flip(self, flip_dims(self, a[1].as_int_list("flip")), out[0]);
      });
  for (bool upper : {false, true}) {
    const char* name = upper ? "triu" : "tril";
    r.add_out(
        std::string(name) + "(Tensor self, int diagonal=0) -> Tensor",
        [name](const Args& a) {
          const Tensor& self = tensor_arg(a, 0, name);
          IP_CHECK(self.dim() >= 2, kInvalidArgument, "[", name,
                   "] input must have at least 2 dims, got shape ", shape_str(self.shape()));
          return one(self.shape(), self.dtype());
        },
        [name, upper](const Args& a, const std::vector<Tensor>& out) {
          cpu::tril_triu(tensor_arg(a, 0, name), a[1].as_int(name), upper, out[0]);
        });
    r.add_inplace(std::string(name) + "_(Tensor(a!) self, int diagonal=0) -> Tensor(a!)", name);
  }
}

#undef IP_LIKE_KW
#undef IP_FACTORY_KW

}  // namespace

void register_creation_ops(Registry& r) {
  register_factories(r);
  register_arange(r);
  register_cat_stack(r);
  register_movement(r);
}

}  // namespace inplace
