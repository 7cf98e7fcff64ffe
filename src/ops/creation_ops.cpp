// Tensor factories (zeros, full, arange, *_like, new_*) and tensor-assembling ops (cat, stack,
// repeat, roll, flip, tril, triu). All have static shapes, so all are add_out ops. Arguments the
// kernels read too are decoded by ops/creation_args.h.
#include "ops/creation_args.h"
#include "ops/registry.h"

namespace inplace {

namespace {

using namespace creation;

// Factory keywords torch accepts; only dtype means anything on CPU. requires_grad is not in
// aten's schemas but torch-level graphs pass it.
#define IP_FACTORY_KW                                                                         \
  "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, " \
  "bool? requires_grad=None"
#define IP_LIKE_KW IP_FACTORY_KW ", MemoryFormat? memory_format=None"

const Tensor& tensor_arg(const Args& a, size_t i, const char* op) {
  return a[i].as_tensor(op);
}

Shape size_arg(const Value& v, const char* op) {
  Shape s = v.as_int_list(op);
  for (int64_t d : s)
    IP_CHECK(d >= 0, kInvalidArgument, "[", op, "] negative dimension ", d, " in size ",
             shape_str(s));
  return s;
}

std::vector<Tensor> one(const Shape& shape, DType dtype) {
  return {Tensor::meta(shape, dtype)};
}

// A factory of `shape_of(args)` and `dtype_of(args)`, filled as its kFilledOps row says.
template <typename ShapeOf, typename DTypeOf>
void add_filled(Registry& r, const std::string& schema, ShapeOf shape_of, DTypeOf dtype_of) {
  r.add_out(
      schema, [=](const Args& a) { return one(shape_of(a), dtype_of(a)); }, nullptr);
}

void register_factories(Registry& r) {
  // zeros / ones / empty (empty is zero-filled: deterministic, and cheap next to the rest).
  struct Sized {
    const char* name;
    const char* overload;
  };
  const Sized kSized[] = {{"zeros", ""}, {"ones", ""}, {"empty", ".memory_format"}};
  for (const Sized& op : kSized) {
    const bool is_empty = std::string(op.name) == "empty";
    std::string schema = std::string(op.name) + op.overload + "(SymInt[] size, *, " IP_FACTORY_KW +
                         (is_empty ? ", MemoryFormat? memory_format=None" : "") + ") -> Tensor";
    const char* n = op.name;
    add_filled(
        r, schema, [n](const Args& a) { return size_arg(a[0], n); },
        [n](const Args& a) { return dtype_or(a[1], DType::kFloat32, n); });
  }
  add_filled(
      r, "full(SymInt[] size, Scalar fill_value, *, " IP_FACTORY_KW ") -> Tensor",
      [](const Args& a) { return size_arg(a[0], "full"); },
      [](const Args& a) { return dtype_or(a[2], a[1].as_scalar("full").default_dtype(), "full"); });
  add_filled(
      r, "scalar_tensor(Scalar s, *, " IP_FACTORY_KW ") -> Tensor",
      [](const Args&) { return Shape{}; },
      [](const Args& a) { return dtype_or(a[1], DType::kFloat32, "scalar_tensor"); });

  // *_like: self's shape and dtype.
  for (const char* n : {"zeros_like", "ones_like", "empty_like"}) {
    add_filled(
        r, std::string(n) + "(Tensor self, *, " IP_LIKE_KW ") -> Tensor",
        [n](const Args& a) { return tensor_arg(a, 0, n).shape(); },
        [n](const Args& a) { return dtype_or(a[1], tensor_arg(a, 0, n).dtype(), n); });
  }
  add_filled(
      r, "full_like(Tensor self, Scalar fill_value, *, " IP_LIKE_KW ") -> Tensor",
      [](const Args& a) { return tensor_arg(a, 0, "full_like").shape(); },
      [](const Args& a) {
        return dtype_or(a[2], tensor_arg(a, 0, "full_like").dtype(), "full_like");
      });

  // new_*: a given size with self's dtype.
  for (const char* n : {"new_zeros", "new_ones", "new_empty"}) {
    add_filled(
        r, std::string(n) + "(Tensor self, SymInt[] size, *, " IP_FACTORY_KW ") -> Tensor",
        [n](const Args& a) { return size_arg(a[1], n); },
        [n](const Args& a) { return dtype_or(a[2], tensor_arg(a, 0, n).dtype(), n); });
  }
  add_filled(
      r, "new_full(Tensor self, SymInt[] size, Scalar fill_value, *, " IP_FACTORY_KW ") -> Tensor",
      [](const Args& a) { return size_arg(a[1], "new_full"); },
      [](const Args& a) {
        return dtype_or(a[3], tensor_arg(a, 0, "new_full").dtype(), "new_full");
      });
}

// ---------------------------------------------------------------- arange

void register_arange(Registry& r) {
  auto add = [&r](const std::string& schema, ArangeForm form) {
    r.add_out(
        schema,
        [form](const Args& a) {
          ArangeSpec s = arange_spec(a, form);
          return one({s.size}, s.dtype);
        },
        nullptr);
  };
  // Tried in this order: the first whose positional count fits wins.
  add("arange(Scalar end, *, " IP_FACTORY_KW ") -> Tensor", ArangeForm::kEnd);
  add("arange.start(Scalar start, Scalar end, *, " IP_FACTORY_KW ") -> Tensor", ArangeForm::kStart);
  add("arange.start_step(Scalar start, Scalar end, Scalar step=1, *, " IP_FACTORY_KW ") -> Tensor",
      ArangeForm::kStartStep);
}

// ---------------------------------------------------------------- cat / stack

void register_cat_stack(Registry& r) {
  r.add_out(
      "cat(Tensor[] tensors, int dim=0) -> Tensor",
      [](const Args& a) {
        CatSpec s = cat_spec(a);
        return one(s.shape, s.dtype);
      },
      nullptr);
  r.add_alias("concat", "cat");
  r.add_alias("concatenate", "cat");
  r.add_out(
      "stack(Tensor[] tensors, int dim=0) -> Tensor",
      [](const Args& a) {
        CatSpec s = stack_spec(a);
        return one(s.shape, s.dtype);
      },
      nullptr);
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

void register_movement(Registry& r) {
  r.add_out(
      "repeat(Tensor self, SymInt[] repeats) -> Tensor",
      [](const Args& a) {
        const Tensor& self = tensor_arg(a, 0, "repeat");
        return one(repeat_shape(self, a[1].as_int_list("repeat")), self.dtype());
      },
      nullptr);
  r.add_out(
      "roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor",
      [](const Args& a) {
        const Tensor& self = tensor_arg(a, 0, "roll");
        roll_dims(self, a[1].as_int_list("roll"), a[2].as_int_list("roll"));
        return one(self.shape(), self.dtype());
      },
      nullptr);
  r.add_out(
      "flip(Tensor self, int[] dims) -> Tensor",
      [](const Args& a) {
        const Tensor& self = tensor_arg(a, 0, "flip");
        flip_dims(self, a[1].as_int_list("flip"));
        return one(self.shape(), self.dtype());
      },
      nullptr);
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
        nullptr);
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
