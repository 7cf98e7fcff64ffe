#include "ops/creation_args.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace inplace::creation {

namespace {

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

ArangeSpec arange_range(Scalar start, Scalar end, Scalar step, const Value& dtype) {
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

bool is_legacy_empty(const Tensor& t) {
  return t.dim() == 1 && t.shape()[0] == 0;
}

}  // namespace

DType dtype_or(const Value& v, DType fallback, const char* op) {
  return v.is_none() ? fallback : v.as_dtype(op);
}

ArangeSpec arange_spec(const Args& a, ArangeForm form) {
  switch (form) {
    case ArangeForm::kEnd:
      return arange_range(Scalar(int64_t{0}), a[0].as_scalar("arange"), Scalar(int64_t{1}), a[1]);
    case ArangeForm::kStart:
      return arange_range(a[0].as_scalar("arange"), a[1].as_scalar("arange"), Scalar(int64_t{1}),
                          a[2]);
    case ArangeForm::kStartStep:
      return arange_range(a[0].as_scalar("arange"), a[1].as_scalar("arange"),
                          a[2].as_scalar("arange"), a[3]);
  }
  IP_FAIL(kInternal, "[arange] unknown overload");
}

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

CatSpec stack_spec(const Args& a) {
  CatSpec s;
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

}  // namespace inplace::creation
