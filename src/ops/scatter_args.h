// gather's and the scatter family's arguments as every backend reads them, and their shape
// rules: gather(self, dim, index); scatter (src / value / reduce / value_reduce), scatter_add and
// scatter_reduce.two, each (self, dim, index, src-or-value, ...).
#pragma once
#include <cstdint>
#include <string>

#include "ops/registry.h"

namespace inplace {

enum class ScatterReduce : uint8_t { kNone, kSum, kProd, kMean, kMax, kMin };

// torch's names: scatter.reduce takes "add"/"multiply"; scatter_reduce.two (two = true) takes
// "sum"/"prod"/"mean"/"amax"/"amin".
ScatterReduce parse_scatter_reduce(const std::string& name, bool two, const char* op);

// Checks gather's rules (same rank; index no larger than self off `dim`); returns the result
// shape (index's). `dim` is wrapped.
Shape check_gather(const Tensor& self, int64_t dim, const Tensor& index, const char* op);
// gather's dim (a[1]) for `self` (a[0]), wrapped (a 0-d self reads as 1-d).
int64_t gather_dim(const Tensor& self, const Args& a);

// Checks scatter's rules: same rank; index no larger than src anywhere nor self off `dim`.
// `src` may be undefined (a scalar value).
void check_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                   const char* op);

// Which scatter an overload is.
enum class ScatterForm { kSrc, kValue, kReduce, kValueReduce, kAdd, kReduceTwo };

struct ScatterCall {
  Tensor self, index, src;  // src undefined: scalar `value`
  int64_t dim = 0;
  Scalar value;
  ScatterReduce reduce = ScatterReduce::kNone;
  bool include_self = true;
};
// The arguments of a scatter overload, checked (check_scatter); `op` names it in errors.
ScatterCall read_scatter_call(const Args& a, ScatterForm form, const char* op);

}  // namespace inplace
