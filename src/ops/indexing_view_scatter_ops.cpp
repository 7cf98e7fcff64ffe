// The functional inverses of view ops: slice_scatter, select_scatter, diagonal_scatter,
// as_strided_scatter. Each returns a copy of self with the view's region replaced by src; src
// must have exactly the region's shape (the regions: ops/view_scatter_args.h). On the KV-cache
// path (a [1,8,1,64] update into a [1,8,4096,64] cache) the cpu kernel is one memcpy of self plus
// one memcpy per updated row.
#include "ops/indexing_ops.h"
#include "ops/view_scatter_args.h"

namespace inplace::indexing {

namespace {

void register_view_scatter(Registry& r, const std::string& schema, ViewScatter kind) {
  r.add_out(
      schema,
      [kind](const Args& a) {
        const char* op = view_scatter_name(kind);
        const Tensor self = tensor_arg(a[0], op);
        const Tensor src = tensor_arg(a[1], op, self.dtype());
        Tensor meta = Tensor::meta(self.shape(), self.dtype());
        checked_view_scatter_region(kind, meta, self, src, a);
        return std::vector<Tensor>{meta};
      },
      nullptr);
}

}  // namespace

void register_view_scatter_ops(Registry& r) {
  register_view_scatter(
      r,
      "slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, "
      "SymInt step=1) -> Tensor",
      ViewScatter::kSlice);
  register_view_scatter(r,
                        "select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor",
                        ViewScatter::kSelect);
  register_view_scatter(
      r,
      "diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor",
      ViewScatter::kDiagonal);
  // Sizes, strides and storage_offset are read against self's contiguous layout (offset 0):
  // torch's meaning for the contiguous base tensors functionalization produces it for.
  register_view_scatter(
      r,
      "as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, SymInt? "
      "storage_offset=None) -> Tensor",
      ViewScatter::kAsStrided);
  r.tag({"slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter"},
        kScatterLike);
}

}  // namespace inplace::indexing
