#include "kernels/cpu/reduction_loop.h"

namespace inplace::cpu {

ReduceLoop make_reduce_loop(const Tensor& in, const DimMask& reduced, const Tensor& out) {
  const int64_t nd = in.dim();
  IP_ASSERT(static_cast<int64_t>(reduced.size()) == nd, "reduce mask covers every input dim");
  IP_CHECK(nd <= kMaxReduceDims, kUnsupported, "[reduce] tensors of more than ", kMaxReduceDims,
           " dims are not supported, got ", shape_str(in.shape()));
  const bool keepdim = out.dim() == nd;
  ReduceLoop p;
  int64_t od = 0;
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t size = in.shape()[d], stride = in.strides()[d];
    if (reduced[d]) {
      if (keepdim) ++od;
      p.red_numel *= size;
      if (size == 1) continue;
      if (!p.red_sizes.empty() && p.red_strides.back() == stride * size) {
        p.red_sizes.back() *= size;
        p.red_strides.back() = stride;
      } else {
        p.red_sizes.push_back(size);
        p.red_strides.push_back(stride);
      }
      continue;
    }
    IP_ASSERT(od < out.dim() && out.shape()[od] == size, "reduction output holds the kept dims");
    p.kept_sizes.push_back(size);
    p.kept_in_strides.push_back(stride);
    p.kept_out_strides.push_back(out.strides()[od]);
    ++od;
  }
  IP_ASSERT(od == out.dim(), "reduction output has one dim per kept (or kept-as-1) input dim");
  return p;
}

}  // namespace inplace::cpu
