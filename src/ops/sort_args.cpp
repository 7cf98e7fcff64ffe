#include "ops/sort_args.h"

#include "core/error.h"

namespace inplace::sorting {

TopkArgs topk_args(const Args& a) {
  const Tensor& x = a[0].as_tensor("topk");
  TopkArgs p;
  p.dim = sort_dim(x, a[2], "topk");
  p.k = a[1].as_int("k");
  const int64_t size = x.dim() > 0 ? x.size(p.dim) : 1;
  IP_CHECK(p.k >= 0 && p.k <= size, kInvalidArgument, "[topk] k (", p.k,
           ") is out of range for dim ", p.dim, " of size ", size, " of input ",
           shape_str(x.shape()));
  IP_CHECK(x.dtype() != DType::kBool, kDTypeMismatch, "[topk] not implemented for bool input ",
           shape_str(x.shape()));
  p.shape = x.shape();
  if (x.dim() > 0) p.shape[p.dim] = p.k;
  return p;
}

}  // namespace inplace::sorting
