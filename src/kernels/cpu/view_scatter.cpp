// The cpu kernels of slice_scatter, select_scatter, diagonal_scatter and as_strided_scatter,
// registered into the kernel table: self into the result, then src into the region the
// arguments name (ops/view_scatter_args.h). Each copy moves whole rows with memcpy when it can.
#include "kernels/cpu/index_common.h"
#include "kernels/cpu/registration.h"
#include "ops/view_scatter_args.h"

namespace inplace::cpu {

void register_view_scatter_kernels(KernelTable& table) {
  using indexing::ViewScatter;
  for (ViewScatter kind : {ViewScatter::kSlice, ViewScatter::kSelect, ViewScatter::kDiagonal,
                           ViewScatter::kAsStrided}) {
    table.add(DeviceType::kCpu, indexing::view_scatter_name(kind),
              [kind](const Args& a, const std::vector<Tensor>& out, const KernelContext&) {
                const char* op = indexing::view_scatter_name(kind);
                const Tensor self = indexing::tensor_arg(a[0], op);
                const Tensor src = indexing::tensor_arg(a[1], op, self.dtype());
                const Tensor dst =
                    indexing::checked_view_scatter_region(kind, out[0], self, src, a);
                copy_region(out[0], self);
                copy_region(dst, src);
              });
  }
}

}  // namespace inplace::cpu
