// Reductions: sum, mean, amax/amin, max/min, argmax/argmin, var, softmax, log_softmax.
#include <optional>

#include "kernels/cpu/reduction.h"
#include "ops/registry.h"

namespace inplace {

namespace {

// The dims a reduction folds (an int, a list, or None / [] for all) and its result shape.
struct Reduction {
  cpu::DimMask mask;
  Shape out_shape;
};

Reduction plan_reduction(const Tensor& x, const Value& dim, bool keepdim, const char* op) {
  const int64_t nd = x.dim();
  Reduction r;
  r.mask.assign(static_cast<size_t>(nd), false);
  std::vector<int64_t> dims = dim.is_none() ? std::vector<int64_t>{} : dim.as_int_list(op);
  if (dims.empty()) r.mask.assign(static_cast<size_t>(nd), true);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, nd, op);
    if (nd == 0) continue;  // a 0-d tensor accepts dim 0 / -1 and reduces nothing
    IP_CHECK(!r.mask[w], kInvalidArgument, "[", op, "] dim ", w,
             " appears multiple times in the list of dims");
    r.mask[w] = true;
  }
  for (int64_t d = 0; d < nd; ++d) {
    if (!r.mask[d])
      r.out_shape.push_back(x.shape()[d]);
    else if (keepdim)
      r.out_shape.push_back(1);
  }
  return r;
}

// max/min/argmax have no identity: every reduced dim must be non-empty.
void check_nonempty_reduction(const Tensor& x, const Reduction& r, const char* op) {
  for (int64_t d = 0; d < x.dim(); ++d)
    IP_CHECK(!r.mask[d] || x.shape()[d] > 0, kInvalidArgument, "[", op, "] cannot reduce over dim ",
             d, " of size 0 of input ", shape_str(x.shape()),
             " (no identity); pass a dim of non-zero size");
}

std::optional<DType> opt_dtype(const Value& v, const char* op) {
  if (v.is_none()) return std::nullopt;
  return v.as_dtype(op);
}

// ---------------------------------------------------------------- sum / mean

DType sum_dtype(const Tensor& x, std::optional<DType> dtype) {
  if (dtype) return *dtype;
  return is_integral(x.dtype(), /*include_bool=*/true) ? DType::kInt64 : x.dtype();
}

void register_sum(Registry& r) {
  // args: self, dim, keepdim, dtype ; sum.default has no dim: dim None reduces all.
  auto run_sum = [](const Tensor& self, const Value& dim, bool keepdim, const Value& dtype_v,
                    const Tensor* out) {
    const DType dt = sum_dtype(self, opt_dtype(dtype_v, "sum"));
    Reduction red = plan_reduction(self, dim, keepdim, "sum");
    if (!out) return Tensor::meta(red.out_shape, dt);
    Tensor x = self;
    // int -> int64 is the kernel's own widening; any other requested dtype converts first.
    if (dt != x.dtype() && !(is_integral(x.dtype(), true) && dt == DType::kInt64)) x = x.to(dt);
    cpu::sum(x, red.mask, *out);
    return *out;
  };
  r.add_out(
      "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) "
      "-> Tensor",
      [run_sum](const Args& a) {
        return std::vector<Tensor>{
            run_sum(a[0].as_tensor("sum"), a[1], a[2].as_bool("sum"), a[3], nullptr)};
      },
      [run_sum](const Args& a, const std::vector<Tensor>& out) {
        run_sum(a[0].as_tensor("sum"), a[1], a[2].as_bool("sum"), a[3], &out[0]);
      });
  r.add_out(
      "sum(Tensor self, *, ScalarType? dtype=None) -> Tensor",
      [run_sum](const Args& a) {
        return std::vector<Tensor>{
            run_sum(a[0].as_tensor("sum"), Value::none(), false, a[1], nullptr)};
      },
      [run_sum](const Args& a, const std::vector<Tensor>& out) {
        run_sum(a[0].as_tensor("sum"), Value::none(), false, a[1], &out[0]);
      });
}

void register_mean(Registry& r) {
  auto run_mean = [](const Tensor& self, const Value& dim, bool keepdim, const Value& dtype_v,
                     const Tensor* out) {
    const std::optional<DType> req = opt_dtype(dtype_v, "mean");
    const DType dt = req ? *req : self.dtype();
    IP_CHECK(is_floating(dt), kDTypeMismatch,
             "[mean] could not infer output dtype: input dtype must be floating point, got ",
             dtype_name(self.dtype()), req ? str_cat(" with dtype=", dtype_name(*req)) : "");
    Reduction red = plan_reduction(self, dim, keepdim, "mean");
    if (!out) return Tensor::meta(red.out_shape, dt);
    cpu::mean(self.to(dt), red.mask, *out);
    return *out;
  };
  r.add_out(
      "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
      [run_mean](const Args& a) {
        return std::vector<Tensor>{
            run_mean(a[0].as_tensor("mean"), a[1], a[2].as_bool("mean"), a[3], nullptr)};
      },
      [run_mean](const Args& a, const std::vector<Tensor>& out) {
        run_mean(a[0].as_tensor("mean"), a[1], a[2].as_bool("mean"), a[3], &out[0]);
      });
  r.add_out(
      "mean(Tensor self, *, ScalarType? dtype=None) -> Tensor",
      [run_mean](const Args& a) {
        return std::vector<Tensor>{
            run_mean(a[0].as_tensor("mean"), Value::none(), false, a[1], nullptr)};
      },
      [run_mean](const Args& a, const std::vector<Tensor>& out) {
        run_mean(a[0].as_tensor("mean"), Value::none(), false, a[1], &out[0]);
      });
}

// ---------------------------------------------------------------- var

// var and std (its square root) share the kernel and the three overloads.
void register_var(Registry& r, const std::string& name, bool take_sqrt) {
  const std::string op = name;
  auto run_var = [op, take_sqrt](const Tensor& self, const Value& dim, double correction,
                                 bool keepdim, const Tensor* out) {
    IP_CHECK(is_floating(self.dtype()), kDTypeMismatch, "[", op,
             "] std and var only support floating point dtypes, got ", dtype_name(self.dtype()));
    Reduction red = plan_reduction(self, dim, keepdim, op.c_str());
    if (!out) return Tensor::meta(red.out_shape, self.dtype());
    cpu::var(self, red.mask, correction, *out, take_sqrt);
    return *out;
  };
  auto unbiased = [op](const Value& v) { return v.as_bool(op.c_str()) ? 1.0 : 0.0; };
  auto correction = [op](const Value& v) { return v.is_none() ? 1.0 : v.as_double(op.c_str()); };
  auto self = [op](const Args& a) { return a[0].as_tensor(op.c_str()); };
  auto flag = [op](const Value& v) { return v.as_bool(op.c_str()); };
  // var.dim before var.default: torch.var(x, 1) means dim 1, not unbiased=1.
  r.add_out(
      name + ".dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor",
      [=](const Args& a) {
        return std::vector<Tensor>{run_var(self(a), a[1], unbiased(a[2]), flag(a[3]), nullptr)};
      },
      [=](const Args& a, const std::vector<Tensor>& out) {
        run_var(self(a), a[1], unbiased(a[2]), flag(a[3]), &out[0]);
      });
  r.add_out(
      name +
          ".correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, "
          "bool keepdim=False) -> Tensor",
      [=](const Args& a) {
        return std::vector<Tensor>{run_var(self(a), a[1], correction(a[2]), flag(a[3]), nullptr)};
      },
      [=](const Args& a, const std::vector<Tensor>& out) {
        run_var(self(a), a[1], correction(a[2]), flag(a[3]), &out[0]);
      });
  r.add_out(
      name + "(Tensor self, bool unbiased=True) -> Tensor",
      [=](const Args& a) {
        return std::vector<Tensor>{run_var(self(a), Value::none(), unbiased(a[1]), false, nullptr)};
      },
      [=](const Args& a, const std::vector<Tensor>& out) {
        run_var(self(a), Value::none(), unbiased(a[1]), false, &out[0]);
      });
}

// ---------------------------------------------------------------- max / min / arg

// amax/amin: values over a list of dims (default all).
void register_amax(Registry& r, const std::string& name, bool is_max) {
  const std::string op = name;
  auto plan = [op](const Args& a) {
    const Tensor& x = a[0].as_tensor(op.c_str());
    Reduction red = plan_reduction(x, a[1], a[2].as_bool(op.c_str()), op.c_str());
    check_nonempty_reduction(x, red, op.c_str());
    return red;
  };
  r.add_out(
      name + "(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
      [plan](const Args& a) {
        return std::vector<Tensor>{Tensor::meta(plan(a).out_shape, a[0].tensor.dtype())};
      },
      [plan, is_max](const Args& a, const std::vector<Tensor>& out) {
        cpu::extreme(a[0].tensor, plan(a).mask, is_max, out[0], Tensor());
      });
}

// max.default / max.dim (and min): max.other is the elementwise `maximum`, registered elsewhere.
void register_max(Registry& r, const std::string& name, bool is_max) {
  const std::string op = name;
  auto plan_all = [op](const Tensor& x) {
    IP_CHECK(x.numel() > 0, kInvalidArgument, "[", op, "] cannot reduce the empty tensor ",
             shape_str(x.shape()), " without a dim; pass a dim of non-zero size");
    return plan_reduction(x, Value::none(), false, op.c_str());
  };
  r.add_out(
      name + "(Tensor self) -> Tensor",
      [op, plan_all](const Args& a) {
        const Tensor& x = a[0].as_tensor(op.c_str());
        return std::vector<Tensor>{Tensor::meta(plan_all(x).out_shape, x.dtype())};
      },
      [plan_all, is_max](const Args& a, const std::vector<Tensor>& out) {
        cpu::extreme(a[0].tensor, plan_all(a[0].tensor).mask, is_max, out[0], Tensor());
      });
  auto plan_dim = [op](const Args& a) {
    const Tensor& x = a[0].as_tensor(op.c_str());
    Reduction red = plan_reduction(x, Value::integer(a[1].as_int(op.c_str())),
                                   a[2].as_bool(op.c_str()), op.c_str());
    check_nonempty_reduction(x, red, op.c_str());
    return red;
  };
  r.add_out(
      name + ".dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
      [plan_dim](const Args& a) {
        Shape s = plan_dim(a).out_shape;
        return std::vector<Tensor>{Tensor::meta(s, a[0].tensor.dtype()),
                                   Tensor::meta(s, DType::kInt64)};
      },
      [plan_dim, is_max](const Args& a, const std::vector<Tensor>& out) {
        cpu::extreme(a[0].tensor, plan_dim(a).mask, is_max, out[0], out[1]);
      });
  // torch.max(a, b) is elementwise maximum (NaN-propagating). Registered after max.dim so that
  // torch.max(x, 1) binds the reduction: an int never binds a Tensor parameter here.
  const OpDef* elementwise = r.find(is_max ? "maximum" : "minimum");
  IP_ASSERT(elementwise, "maximum/minimum must be registered before the reductions");
  OpDef other = *elementwise;
  other.schema = Schema::parse(name + ".other(Tensor self, Tensor other) -> Tensor");
  r.add(std::move(other));
}

// argmax/argmin: dim None flattens (keepdim then gives all-ones dims).
void register_argmax(Registry& r, const std::string& name, bool is_max) {
  const std::string op = name;
  auto plan = [op](const Args& a) {
    const Tensor& x = a[0].as_tensor(op.c_str());
    IP_CHECK(x.dtype() != DType::kBool, kDTypeMismatch, "[", op, "] not implemented for bool");
    if (a[1].is_none())
      IP_CHECK(x.numel() > 0, kInvalidArgument, "[", op, "] cannot reduce the empty tensor ",
               shape_str(x.shape()), " without a dim; pass a dim of non-zero size");
    Value dim = a[1].is_none() ? Value::none() : Value::integer(a[1].as_int(op.c_str()));
    Reduction red = plan_reduction(x, dim, a[2].as_bool(op.c_str()), op.c_str());
    check_nonempty_reduction(x, red, op.c_str());
    return red;
  };
  r.add_out(
      name + "(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
      [plan](const Args& a) {
        return std::vector<Tensor>{Tensor::meta(plan(a).out_shape, DType::kInt64)};
      },
      [plan, is_max](const Args& a, const std::vector<Tensor>& out) {
        cpu::extreme(a[0].tensor, plan(a).mask, is_max, Tensor(), out[0]);
      });
}

// ---------------------------------------------------------------- softmax

// F.softmax(dim=None)'s legacy choice of dim.
int64_t legacy_softmax_dim(int64_t ndim) {
  return (ndim == 0 || ndim == 1 || ndim == 3) ? 0 : 1;
}

void register_softmax(Registry& r, const std::string& name, bool log) {
  const std::string op = name;
  // args -> (self, wrapped dim, result dtype)
  struct Plan {
    Tensor self;
    int64_t dim;
    DType dtype;
  };
  auto make = [op](const Tensor& self, int64_t dim, std::optional<DType> dtype) {
    const DType dt = dtype ? *dtype : self.dtype();
    IP_CHECK(is_floating(dt), kDTypeMismatch, "[", op,
             "] expected a floating point input (or a floating dtype=), got ",
             dtype_name(self.dtype()));
    return Plan{self, wrap_dim(dim, self.dim(), op.c_str()), dt};
  };
  auto add = [&r, log](const std::string& schema, std::function<Plan(const Args&)> plan) {
    r.add_out(
        schema,
        [plan](const Args& a) {
          Plan p = plan(a);
          return std::vector<Tensor>{Tensor::meta(p.self.shape(), p.dtype)};
        },
        [plan, log](const Args& a, const std::vector<Tensor>& out) {
          Plan p = plan(a);
          cpu::softmax(p.self, p.dim, log, out[0]);
        });
  };
  add(name + ".int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
      [make, op](const Args& a) {
        const char* c = op.c_str();
        return make(a[0].as_tensor(c), a[1].as_int(c), opt_dtype(a[2], c));
      });
  // torch.nn.functional.softmax(input, dim=None, _stacklevel=3, dtype=None), as FX records it.
  add(name +
          ".functional(Tensor input, int? dim=None, int _stacklevel=3, ScalarType? dtype=None)"
          " -> Tensor",
      [make, op](const Args& a) {
        const char* c = op.c_str();
        const Tensor& x = a[0].as_tensor(c);
        int64_t dim = a[1].is_none() ? legacy_softmax_dim(x.dim()) : a[1].as_int(c);
        return make(x, dim, opt_dtype(a[3], c));
      });
  // aten._softmax(self, dim, half_to_float): half_to_float gives a float32 result.
  add("_" + name + "(Tensor self, int dim, bool half_to_float) -> Tensor", [make,
                                                                            op](const Args& a) {
    const char* c = op.c_str();
    const Tensor& x = a[0].as_tensor(c);
    const bool to_float =
        a[2].as_bool(c) && (x.dtype() == DType::kFloat16 || x.dtype() == DType::kBFloat16);
    return make(x, a[1].as_int(c), to_float ? std::optional<DType>(DType::kFloat32) : std::nullopt);
  });
}

}  // namespace

void register_reduction_ops(Registry& r) {
  register_sum(r);
  register_mean(r);
  register_var(r, "var", false);
  register_var(r, "std", true);
  register_amax(r, "amax", true);
  register_amax(r, "amin", false);
  register_max(r, "max", true);
  register_max(r, "min", false);
  register_argmax(r, "argmax", true);
  register_argmax(r, "argmin", false);
  register_softmax(r, "softmax", false);
  register_softmax(r, "log_softmax", true);
}

}  // namespace inplace
