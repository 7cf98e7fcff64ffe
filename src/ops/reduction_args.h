// Argument decoding of the reductions (sum, mean, var/std, amax/amin, max/min, argmax/argmin,
// softmax/log_softmax), read by their declarations (shape/dtype rules) and by every backend's
// kernels: which dims an overload folds, the result dtype, softmax's dim.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "core/tensor.h"
#include "core/value.h"
#include "ops/registry.h"  // Args

namespace inplace::reduction {

using DimMask = std::vector<bool>;  // DimMask[d]: input dim d is reduced

// The dims a reduction folds (an int, a list, or None / [] for all) and its result shape.
struct Reduction {
  DimMask mask;
  Shape out_shape;
};
Reduction plan_reduction(const Tensor& x, const Value& dim, bool keepdim, const char* op);

std::optional<DType> opt_dtype(const Value& v, const char* op);

// sum.dim_IntList (self, dim, keepdim, dtype) and sum.default (self, dtype), mean alike.
struct SumArgs {
  Tensor self;
  Value dim;  // none: every dim
  bool keepdim = false;
  Value dtype;
};
SumArgs sum_args(const Args& a, bool has_dim, const char* op);
// sum's result dtype: `dtype`, else int64 for an integral or bool self, else self's.
DType sum_dtype(const Tensor& x, std::optional<DType> dtype);
// mean's result dtype (`dtype` or self's), which must be floating.
DType mean_dtype(const Tensor& self, const Value& dtype);

// var / std: .dim (self, dim, unbiased, keepdim), .correction (self, dim, correction, keepdim)
// and .default (self, unbiased); checks a floating self.
enum class VarForm { kDim, kCorrection, kDefault };
struct VarArgs {
  Tensor self;
  Value dim;
  double correction = 1;
  bool keepdim = false;
};
VarArgs var_args(const Args& a, VarForm form, const char* op);

// The reductions with no identity, each overload's dims (every reduced dim must be non-empty):
// amax/amin (self, dim=[], keepdim), max/min.default (self), max/min.dim (self, dim, keepdim),
// argmax/argmin (self, dim=None, keepdim; not bool).
Reduction amax_plan(const Args& a, const char* op);
Reduction max_all_plan(const Tensor& x, const char* op);
Reduction max_dim_plan(const Args& a, const char* op);
Reduction argmax_plan(const Args& a, const char* op);

// F.softmax(dim=None)'s legacy choice of dim.
int64_t legacy_softmax_dim(int64_t ndim);
// softmax / log_softmax: self, the wrapped dim and the result dtype, by overload (.int,
// .functional as FX records torch.nn.functional.softmax, aten._softmax's half_to_float).
enum class SoftmaxForm { kInt, kFunctional, kAten };
struct SoftmaxArgs {
  Tensor self;
  int64_t dim = 0;
  DType dtype = DType::kFloat32;
};
SoftmaxArgs softmax_args(const Args& a, SoftmaxForm form, const char* op);

}  // namespace inplace::reduction
