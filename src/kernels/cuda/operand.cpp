#include "core/error.h"
#include "kernels/cuda/launch.h"

namespace inplace::cuda {

Operand operand(const Tensor& t, const Shape& shape) {
  IP_CHECK(static_cast<int64_t>(shape.size()) <= kMaxDims, kUnsupported, "[cuda] ", shape.size(),
           "-d operands are not supported (at most ", kMaxDims, " dims)");
  Operand o;
  o.data = static_cast<char*>(t.data_ptr());
  o.dtype = t.dtype();
  o.ndim = static_cast<int>(shape.size());
  const int64_t lead = o.ndim - t.dim();
  IP_ASSERT(lead >= 0, "an operand broadcasts to a shape of at least its rank");
  for (int d = 0; d < o.ndim; ++d) {
    o.size[d] = shape[d];
    const int64_t src = d - lead;
    o.stride[d] = src < 0 || t.size(src) == 1 ? 0 : t.stride(src);
  }
  return o;
}

Operand operand(const Tensor& t) {
  return operand(t, t.shape());
}

Operand number(Scalar s) {
  Operand o;
  o.is_number = true;
  o.number_is_float = s.is_float();
  o.f = s.to_double();
  o.i = s.is_float() ? 0 : s.to_int();
  return o;
}

int64_t numel(const Operand& o) {
  int64_t n = 1;
  for (int d = 0; d < o.ndim; ++d) n *= o.size[d];
  return n;
}

}  // namespace inplace::cuda
