// View ops: results share the argument's storage (a write through either is seen through the
// other) and touch no data, so they run on meta tensors too. reshape and flatten may copy, so
// they are not registered as views: they view when strides allow, and have an out path that
// always copies. Also here: size / dim / numel, which return numbers.
#include <algorithm>

#include "ops/registry.h"

namespace inplace {

namespace {

const Tensor& self_arg(const Args& a, const char* op) {
  return a[0].as_tensor(op);
}

Value tensor_value(Tensor t) {
  return Value::from_tensor(std::move(t));
}

Value tensor_list_value(const std::vector<Tensor>& ts) {
  std::vector<Value> items;
  items.reserve(ts.size());
  for (const Tensor& t : ts) items.push_back(Value::from_tensor(t));
  return Value::list(std::move(items));
}

std::optional<int64_t> optional_int(const Value& v, const char* op) {
  if (v.is_none()) return std::nullopt;
  return v.as_int(op);
}

Tensor movedim(const Tensor& self, std::vector<int64_t> src, std::vector<int64_t> dst) {
  IP_CHECK(src.size() == dst.size(), kInvalidArgument, "[movedim] source ", shape_str(src),
           " and destination ", shape_str(dst), " must name the same number of dims");
  const int64_t n = self.dim();
  for (size_t i = 0; i < src.size(); ++i) {
    src[i] = wrap_dim(src[i], n, "movedim");
    dst[i] = wrap_dim(dst[i], n, "movedim");
  }
  if (n == 0) return self;
  std::vector<int64_t> perm(static_cast<size_t>(n), -1);
  std::vector<bool> moved(static_cast<size_t>(n), false);
  for (size_t i = 0; i < src.size(); ++i) {
    IP_CHECK(!moved[src[i]], kInvalidArgument, "[movedim] repeated dim ", src[i], " in source ",
             shape_str(src));
    IP_CHECK(perm[dst[i]] < 0, kInvalidArgument, "[movedim] repeated dim ", dst[i],
             " in destination ", shape_str(dst));
    perm[dst[i]] = src[i];
    moved[src[i]] = true;
  }
  // The dims not moved keep their relative order in the free slots.
  int64_t next = 0;
  for (int64_t& p : perm) {
    if (p >= 0) continue;
    while (moved[next]) ++next;
    p = next++;
  }
  return self.permute(perm);
}

// reshape's out path: the result is contiguous, so it can always be seen in self's shape.
void copy_reshaped(const Tensor& self, const Tensor& out) {
  out.view(self.shape()).copy_from(self);
}

// Registers an op that views when strides allow and copies otherwise (reshape, flatten).
// `fn` computes the eager result; infer/out always describe the copying form.
void add_maybe_view(Registry& r, const std::string& schema, Tensor (*fn)(const Args&)) {
  OpDef def;
  def.schema = Schema::parse(schema);
  def.maybe_view = true;
  def.eager = [fn](const Args& a) { return tensor_value(fn(a)); };
  def.infer = [fn](const Args& a) {
    // On a contiguous meta stand-in for self the shape work never copies.
    Args metas = a;
    const Tensor& self = a[0].as_tensor("reshape");
    metas[0] = Value::from_tensor(Tensor::meta(self.shape(), self.dtype()));
    Tensor t = fn(metas);
    return std::vector<Tensor>{Tensor::meta(t.shape(), t.dtype())};
  };
  def.out = [](const Args& a, const std::vector<Tensor>& out) {
    copy_reshaped(a[0].as_tensor("reshape"), out[0]);
  };
  r.add(std::move(def));
}

void register_reshapes(Registry& r) {
  r.add_view("view(Tensor(a) self, SymInt[] size) -> Tensor(a)", [](const Args& a) {
    return tensor_value(self_arg(a, "view").view(a[1].as_int_list("view")));
  });
  r.add_view("view_as(Tensor(a) self, Tensor other) -> Tensor(a)", [](const Args& a) {
    return tensor_value(self_arg(a, "view_as").view(a[1].as_tensor("view_as").shape()));
  });
  // infer runs these on metas: Tensor::reshape of a meta never copies.
  add_maybe_view(r, "reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)", [](const Args& a) {
    return self_arg(a, "reshape").reshape(a[1].as_int_list("reshape"));
  });
  add_maybe_view(r, "reshape_as(Tensor(a) self, Tensor other) -> Tensor(a)", [](const Args& a) {
    return self_arg(a, "reshape_as").reshape(a[1].as_tensor("reshape_as").shape());
  });
  // make_fx records reshape-that-copies as _unsafe_view(clone(x)): a fresh result.
  add_maybe_view(r, "_unsafe_view(Tensor self, SymInt[] size) -> Tensor", [](const Args& a) {
    return self_arg(a, "_unsafe_view").reshape(a[1].as_int_list("_unsafe_view"));
  });
  add_maybe_view(
      r, "flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)",
      [](const Args& a) {
        return self_arg(a, "flatten").flatten(a[1].as_int("flatten"), a[2].as_int("flatten"));
      });
  r.add_view(
      "unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)", [](const Args& a) {
        Shape sizes = a[2].as_int_list("unflatten");
        IP_CHECK(!sizes.empty(), kInvalidArgument, "[unflatten] sizes must be non-empty");
        return tensor_value(self_arg(a, "unflatten").unflatten(a[1].as_int("unflatten"), sizes));
      });
  r.add_view(
      "as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> "
      "Tensor(a)",
      [](const Args& a) {
        return tensor_value(self_arg(a, "as_strided")
                                .as_strided(a[1].as_int_list("as_strided"),
                                            a[2].as_int_list("as_strided"),
                                            optional_int(a[3], "as_strided")));
      });
  // What make_fx (torch 1.13) records for a reshape/flatten that can be a view: the strides
  // are the ones reshape computed, the offset is self's.
  r.add_view("_reshape_alias(Tensor(a) self, SymInt[] size, SymInt[] stride) -> Tensor(a)",
             [](const Args& a) {
               const Tensor& self = self_arg(a, "_reshape_alias");
               Shape size = a[1].as_int_list("_reshape_alias");
               IP_CHECK(numel_of(size) == self.numel(), kShapeMismatch, "[_reshape_alias] shape ",
                        shape_str(size), " is invalid for input ", shape_str(self.shape()));
               return tensor_value(
                   self.as_strided(size, a[2].as_int_list("_reshape_alias"), std::nullopt));
             });
}

void register_permutes(Registry& r) {
  r.add_view("permute(Tensor(a) self, int[] dims) -> Tensor(a)", [](const Args& a) {
    return tensor_value(self_arg(a, "permute").permute(a[1].as_int_list("permute")));
  });
  r.add_view("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", [](const Args& a) {
    return tensor_value(
        self_arg(a, "transpose").transpose(a[1].as_int("transpose"), a[2].as_int("transpose")));
  });
  r.add_view("t(Tensor(a) self) -> Tensor(a)",
             [](const Args& a) { return tensor_value(self_arg(a, "t").t()); });
  r.add_view("swapaxes(Tensor(a) self, int axis0, int axis1) -> Tensor(a)", [](const Args& a) {
    return tensor_value(
        self_arg(a, "swapaxes").transpose(a[1].as_int("swapaxes"), a[2].as_int("swapaxes")));
  });
  r.add_view("swapdims(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", [](const Args& a) {
    return tensor_value(
        self_arg(a, "swapdims").transpose(a[1].as_int("swapdims"), a[2].as_int("swapdims")));
  });
  // int before intlist: a single int also binds to int[].
  r.add_view(
      "movedim.int(Tensor(a) self, int source, int destination) -> Tensor(a)", [](const Args& a) {
        return tensor_value(
            movedim(self_arg(a, "movedim"), {a[1].as_int("movedim")}, {a[2].as_int("movedim")}));
      });
  r.add_view("movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)",
             [](const Args& a) {
               return tensor_value(movedim(self_arg(a, "movedim"), a[1].as_int_list("movedim"),
                                           a[2].as_int_list("movedim")));
             });
  r.add_alias("moveaxis", "movedim");
  r.add_view("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)",
             [](const Args& a) {
               return tensor_value(self_arg(a, "diagonal")
                                       .diagonal(a[1].as_int("diagonal"), a[2].as_int("diagonal"),
                                                 a[3].as_int("diagonal")));
             });
}

void register_indexing_views(Registry& r) {
  r.add_view(
      "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt "
      "step=1) -> Tensor(a)",
      [](const Args& a) {
        return tensor_value(self_arg(a, "slice")
                                .slice(a[1].as_int("slice"), optional_int(a[2], "slice"),
                                       optional_int(a[3], "slice"), a[4].as_int("slice")));
      });
  r.add_view("select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)", [](const Args& a) {
    return tensor_value(self_arg(a, "select").select(a[1].as_int("select"), a[2].as_int("select")));
  });
  r.add_view("narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)",
             [](const Args& a) {
               return tensor_value(self_arg(a, "narrow")
                                       .narrow(a[1].as_int("narrow"), a[2].as_int("narrow"),
                                               a[3].as_int("narrow")));
             });
}

void register_shape_views(Registry& r) {
  r.add_view("expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)",
             [](const Args& a) {
               return tensor_value(self_arg(a, "expand").expand(a[1].as_int_list("expand")));
             });
  r.add_view("expand_as(Tensor(a) self, Tensor other) -> Tensor(a)", [](const Args& a) {
    return tensor_value(self_arg(a, "expand_as").expand(a[1].as_tensor("expand_as").shape()));
  });
  r.add_view("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", [](const Args& a) {
    return tensor_value(self_arg(a, "unsqueeze").unsqueeze(a[1].as_int("unsqueeze")));
  });
  // Tried in order: no dim, one dim, then a list (an int also binds to int[]).
  r.add_view("squeeze(Tensor(a) self) -> Tensor(a)",
             [](const Args& a) { return tensor_value(self_arg(a, "squeeze").squeeze()); });
  r.add_view("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", [](const Args& a) {
    return tensor_value(self_arg(a, "squeeze").squeeze({a[1].as_int("squeeze")}));
  });
  r.add_view("squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)", [](const Args& a) {
    return tensor_value(self_arg(a, "squeeze").squeeze(a[1].as_int_list("squeeze")));
  });
}

void register_splits(Registry& r) {
  // split with an int, then with a list (torch.split(x, [1, 2]) is split_with_sizes).
  r.add_view("split.Tensor(Tensor(a) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
             [](const Args& a) {
               return tensor_list_value(
                   self_arg(a, "split").split(a[1].as_int("split"), a[2].as_int("split")));
             });
  r.add_view(
      "split.sizes(Tensor(a) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]",
      [](const Args& a) {
        return tensor_list_value(
            self_arg(a, "split").split_with_sizes(a[1].as_int_list("split"), a[2].as_int("split")));
      });
  r.add_view("split_with_sizes(Tensor(a) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]",
             [](const Args& a) {
               return tensor_list_value(self_arg(a, "split_with_sizes")
                                            .split_with_sizes(a[1].as_int_list("split_with_sizes"),
                                                              a[2].as_int("split_with_sizes")));
             });
  r.add_view("chunk(Tensor(a) self, int chunks, int dim=0) -> Tensor(a)[]", [](const Args& a) {
    return tensor_list_value(
        self_arg(a, "chunk").chunk(a[1].as_int("chunk"), a[2].as_int("chunk")));
  });
  r.add_view("unbind.int(Tensor(a) self, int dim=0) -> Tensor(a)[]", [](const Args& a) {
    return tensor_list_value(self_arg(a, "unbind").unbind(a[1].as_int("unbind")));
  });
}

// Shape queries return Python ints (a tuple for the whole size), never tensors.
void register_shape_queries(Registry& r) {
  auto whole_size = [](const char* op) {
    return [op](const Args& a) {
      std::vector<Value> items;
      for (int64_t s : self_arg(a, op).shape()) items.push_back(Value::integer(s));
      return Value::tuple(std::move(items));
    };
  };
  auto one_size = [](const char* op) {
    return [op](const Args& a) {
      const Tensor& self = self_arg(a, op);
      int64_t d = a[1].as_int(op);
      IP_CHECK(self.dim() > 0, kOutOfRange, "[", op, "] dim ", d,
               " specified but the tensor has no dims");
      return Value::integer(self.shape()[wrap_dim(d, self.dim(), op)]);
    };
  };
  auto numel = [](const char* op) {
    return [op](const Args& a) { return Value::integer(self_arg(a, op).numel()); };
  };
  // x.size() binds the first, x.size(1) the second.
  r.add_eager("size(Tensor self) -> int[]", whole_size("size"));
  r.add_eager("size.int(Tensor self, int dim) -> int", one_size("size"));
  r.add_eager("sym_size.int(Tensor self, int dim) -> SymInt", one_size("sym_size"));
  r.add_eager("sym_size(Tensor self) -> SymInt[]", whole_size("sym_size"));
  r.add_eager("numel(Tensor self) -> int", numel("numel"));
  r.add_eager("sym_numel(Tensor self) -> SymInt", numel("sym_numel"));
  r.add_eager("dim(Tensor self) -> int",
              [](const Args& a) { return Value::integer(self_arg(a, "dim").dim()); });
  r.add_alias("nelement", "numel");
  r.add_alias("ndimension", "dim");
}

}  // namespace

void register_view_ops(Registry& r) {
  register_reshapes(r);
  register_permutes(r);
  register_indexing_views(r);
  register_shape_views(r);
  register_splits(r);
  register_shape_queries(r);
}

}  // namespace inplace
