#include "ops/scatter_args.h"

#include <algorithm>

#include "core/error.h"
#include "ops/index_args.h"

namespace inplace {

ScatterReduce parse_scatter_reduce(const std::string& name, bool two, const char* op) {
  if (!two) {
    if (name == "add") return ScatterReduce::kSum;
    if (name == "multiply") return ScatterReduce::kProd;
    IP_FAIL(kInvalidArgument, "[", op, "] reduce argument must be either add or multiply, got '",
            name, "'");
  }
  if (name == "sum") return ScatterReduce::kSum;
  if (name == "prod") return ScatterReduce::kProd;
  if (name == "mean") return ScatterReduce::kMean;
  if (name == "amax") return ScatterReduce::kMax;
  if (name == "amin") return ScatterReduce::kMin;
  IP_FAIL(kInvalidArgument, "[", op,
          "] reduce argument must be one of sum, prod, mean, amax, amin, got '", name, "'");
}

namespace {

// torch treats 0-dim operands of gather/scatter as 1-dim of size 1.
Tensor at_least_1d(const Tensor& t) {
  return t.defined() && t.dim() == 0 ? t.unsqueeze(0) : t;
}

void check_rank(const Tensor& index, const Tensor& b, const char* b_name, const char* op) {
  IP_CHECK(std::max<int64_t>(index.dim(), 1) == std::max<int64_t>(b.dim(), 1), kShapeMismatch, "[",
           op, "] index ", shape_str(index.shape()), " must have as many dims as ", b_name, " ",
           shape_str(b.shape()));
}

}  // namespace

Shape check_gather(const Tensor& self, int64_t dim, const Tensor& index, const char* op) {
  check_index_dtype(index, op);
  check_rank(index, self, "self", op);
  const Tensor s = at_least_1d(self), i = at_least_1d(index);
  for (int64_t d = 0; d < s.dim(); ++d)
    IP_CHECK(d == dim || i.shape()[d] <= s.shape()[d], kShapeMismatch, "[", op, "] index ",
             shape_str(index.shape()), " is larger than self ", shape_str(self.shape()),
             " at dimension ", d, " (only dimension ", dim, " may differ)");
  return index.shape();
}

int64_t gather_dim(const Tensor& self, const Args& a) {
  return wrap_dim(a[1].as_int("gather"), std::max<int64_t>(self.dim(), 1), "gather");
}

void check_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                   const char* op) {
  check_index_dtype(index, op);
  check_rank(index, self, "self", op);
  if (src.defined()) check_rank(index, src, "src", op);
  const Tensor s = at_least_1d(self), i = at_least_1d(index), v = at_least_1d(src);
  for (int64_t d = 0; d < s.dim(); ++d) {
    IP_CHECK(d == dim || i.shape()[d] <= s.shape()[d], kShapeMismatch, "[", op, "] index ",
             shape_str(index.shape()), " is larger than self ", shape_str(self.shape()),
             " at dimension ", d, " (only dimension ", dim, " may differ)");
    IP_CHECK(!src.defined() || i.shape()[d] <= v.shape()[d], kShapeMismatch, "[", op, "] index ",
             shape_str(index.shape()), " is larger than src ", shape_str(src.shape()),
             " at dimension ", d);
  }
}

ScatterCall read_scatter_call(const Args& a, ScatterForm form, const char* op) {
  ScatterCall c;
  c.self = indexing::tensor_arg(a[0], op);
  c.dim = wrap_dim(a[1].as_int(op), std::max<int64_t>(c.self.dim(), 1), op);
  c.index = indexing::tensor_arg(a[2], op);
  // A Python number passed as src is a value (torch.scatter(x, 0, i, 1.5) binds .value).
  if (form == ScatterForm::kValue || form == ScatterForm::kValueReduce || a[3].is_number())
    c.value = a[3].as_scalar(op);
  else
    c.src = a[3].as_tensor(op);
  if (form == ScatterForm::kReduce || form == ScatterForm::kValueReduce)
    c.reduce = parse_scatter_reduce(a[4].as_string(op), false, op);
  if (form == ScatterForm::kAdd) c.reduce = ScatterReduce::kSum;
  if (form == ScatterForm::kReduceTwo) {
    c.reduce = parse_scatter_reduce(a[4].as_string(op), true, op);
    c.include_self = a[5].as_bool(op);
    IP_CHECK(c.src.defined(), kInvalidArgument, "[", op, "] src must be a tensor");
  }
  check_scatter(c.self, c.dim, c.index, c.src, op);
  return c;
}

}  // namespace inplace
