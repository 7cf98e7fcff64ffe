// gather / scatter along one dim: out[i][j] = self[index[i][j]][j] and its inverse, with
// torch's reductions (scatter.reduce, scatter_add, scatter_reduce.two).
#pragma once
#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace inplace::cpu {

enum class ScatterReduce : uint8_t { kNone, kSum, kProd, kMean, kMax, kMin };

// torch's names: scatter.reduce takes "add"/"multiply"; scatter_reduce.two (two = true) takes
// "sum"/"prod"/"mean"/"amax"/"amin".
ScatterReduce parse_scatter_reduce(const std::string& name, bool two, const char* op);

// Checks gather's rules (same rank; index no larger than self off `dim`); returns the result
// shape (index's). `dim` is wrapped.
Shape check_gather(const Tensor& self, int64_t dim, const Tensor& index, const char* op);
void gather(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out,
            const char* op);

// Checks scatter's rules: same rank; index no larger than src anywhere nor self off `dim`.
// `src` may be undefined (a scalar value).
void check_scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                   const char* op);
// self[...index[i][j]...] (reduce)= src[i][j], or `value` where src is undefined; index elements
// are visited in row-major order, so with kNone the last duplicate wins. kMean is not allowed
// here (see scatter_reduce_two).
void scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, Scalar value,
             ScatterReduce reduce, const char* op);
// torch.scatter_reduce (in place on self): include_self=false first resets every target to the
// reduction's identity; mean divides by the number of contributions (floor for integers).
void scatter_reduce_two(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                        ScatterReduce reduce, bool include_self, const char* op);

}  // namespace inplace::cpu
