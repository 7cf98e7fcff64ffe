// gather / scatter along one dim: out[i][j] = self[index[i][j]][j] and its inverse, with
// torch's reductions (scatter.reduce, scatter_add, scatter_reduce.two). Their arguments and
// shape rules: ops/scatter_args.h.
#pragma once
#include <cstdint>
#include <string>

#include "core/tensor.h"
#include "ops/scatter_args.h"

namespace inplace::cpu {

void gather(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& out,
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
