// The functional inverses of view ops: slice_scatter, select_scatter, diagonal_scatter,
// as_strided_scatter. Each returns a copy of self with the view's region replaced by src; src
// must have exactly the region's shape. On the KV-cache path (a [1,8,1,64] update into a
// [1,8,4096,64] cache) this is one memcpy of self plus one memcpy per updated row.
#include "kernels/cpu/index_common.h"
#include "ops/indexing_ops.h"

namespace inplace::indexing {

namespace {

std::string opt_str(const Value& v) {
  return v.is_none() ? "None" : std::to_string(v.as_int(""));
}

// The region of `t` (self, a meta, or the result) that an op's arguments name.
using RegionFn = std::function<Tensor(const Tensor& t, const Args& a)>;

void check_region(const Tensor& region, const Tensor& self, const Tensor& src, const char* op,
                  const std::string& where) {
  IP_CHECK(region.shape() == src.shape(), kShapeMismatch, "[", op, "] src shape ",
           shape_str(src.shape()), " does not match the region ", shape_str(region.shape()),
           " of self ", shape_str(self.shape()), " at ", where);
}

void register_view_scatter(Registry& r, const std::string& schema, const char* op, RegionFn region,
                           std::function<std::string(const Args&)> where) {
  r.add_out(
      schema,
      [op, region, where](const Args& a) {
        const Tensor self = tensor_arg(a[0], op);
        const Tensor src = tensor_arg(a[1], op, self.dtype());
        Tensor meta = Tensor::meta(self.shape(), self.dtype());
        check_region(region(meta, a), self, src, op, where(a));
        return std::vector<Tensor>{meta};
      },
      [op, region, where](const Args& a, const std::vector<Tensor>& out) {
        const Tensor self = tensor_arg(a[0], op);
        const Tensor src = tensor_arg(a[1], op, self.dtype());
        Tensor dst = region(out[0], a);
        check_region(dst, self, src, op, where(a));
        cpu::copy_region(out[0], self);
        cpu::copy_region(dst, src);
      });
}

}  // namespace

void register_view_scatter_ops(Registry& r) {
  register_view_scatter(
      r,
      "slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, "
      "SymInt step=1) -> Tensor",
      "slice_scatter",
      [](const Tensor& t, const Args& a) {
        const char* op = "slice_scatter";
        IP_CHECK(t.dim() > 0, kInvalidArgument, "[slice_scatter] self must have at least 1 dim");
        int64_t dim = wrap_dim(a[2].as_int(op), t.dim(), op);
        auto bound = [&](const Value& v) -> std::optional<int64_t> {
          if (v.is_none()) return std::nullopt;
          return v.as_int(op);
        };
        int64_t step = a[5].as_int(op);
        IP_CHECK(step > 0, kInvalidArgument, "[slice_scatter] step must be positive, got ", step);
        return t.slice(dim, bound(a[3]), bound(a[4]), step);
      },
      [](const Args& a) {
        return str_cat("dim ", a[2].as_int("slice_scatter"), ", start ", opt_str(a[3]), ", end ",
                       opt_str(a[4]), ", step ", a[5].as_int("slice_scatter"));
      });
  register_view_scatter(
      r, "select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor",
      "select_scatter",
      [](const Tensor& t, const Args& a) {
        const char* op = "select_scatter";
        IP_CHECK(t.dim() > 0, kInvalidArgument, "[select_scatter] self must have at least 1 dim");
        int64_t dim = wrap_dim(a[2].as_int(op), t.dim(), op);
        int64_t index = cpu::wrap_index(a[3].as_int(op), t.shape()[dim], dim, op);
        return t.select(dim, index);
      },
      [](const Args& a) {
        return str_cat("dim ", a[2].as_int("select_scatter"), ", index ",
                       a[3].as_int("select_scatter"));
      });
  register_view_scatter(
      r,
      "diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor",
      "diagonal_scatter",
      [](const Tensor& t, const Args& a) {
        const char* op = "diagonal_scatter";
        IP_CHECK(t.dim() >= 2, kInvalidArgument,
                 "[diagonal_scatter] self must have at least 2 "
                 "dims, got shape ",
                 shape_str(t.shape()));
        return t.diagonal(a[2].as_int(op), a[3].as_int(op), a[4].as_int(op));
      },
      [](const Args& a) {
        return str_cat("offset ", a[2].as_int("diagonal_scatter"), ", dim1 ",
                       a[3].as_int("diagonal_scatter"), ", dim2 ", a[4].as_int("diagonal_scatter"));
      });
  // Sizes, strides and storage_offset are read against self's contiguous layout (offset 0):
  // torch's meaning for the contiguous base tensors functionalization produces it for.
  register_view_scatter(
      r,
      "as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, SymInt? "
      "storage_offset=None) -> Tensor",
      "as_strided_scatter",
      [](const Tensor& t, const Args& a) {
        const char* op = "as_strided_scatter";
        Shape size = a[2].as_int_list(op), stride = a[3].as_int_list(op);
        int64_t offset = a[4].is_none() ? 0 : a[4].as_int(op);
        IP_CHECK(size.size() == stride.size(), kInvalidArgument, "[", op, "] size ",
                 shape_str(size), " and stride ", shape_str(stride), " differ in rank");
        int64_t last = offset;
        for (size_t i = 0; i < size.size(); ++i) {
          IP_CHECK(size[i] >= 0 && stride[i] >= 0, kInvalidArgument, "[", op,
                   "] negative size or stride in ", shape_str(size), " / ", shape_str(stride));
          last += (size[i] - 1) * stride[i];
        }
        IP_CHECK(offset >= 0 && (numel_of(size) == 0 || last < t.numel()), kOutOfRange, "[", op,
                 "] view ", shape_str(size), " with strides ", shape_str(stride), " at offset ",
                 offset, " reaches past self ", shape_str(t.shape()), " of ", t.numel(),
                 " elements");
        IP_CHECK(t.is_meta() || t.is_contiguous(), kInvalidArgument, "[", op,
                 "] the result must be contiguous");
        return Tensor(t.storage(), t.offset() + offset, size, stride, t.dtype());
      },
      [](const Args& a) {
        return str_cat("size ", shape_str(a[2].as_int_list("as_strided_scatter")), ", stride ",
                       shape_str(a[3].as_int_list("as_strided_scatter")), ", storage_offset ",
                       opt_str(a[4]));
      });
  r.tag({"slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter"},
        kScatterLike);
}

}  // namespace inplace::indexing
