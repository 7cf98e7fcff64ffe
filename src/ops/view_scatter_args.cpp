#include "ops/view_scatter_args.h"

#include <optional>
#include <string>

#include "core/error.h"
#include "ops/index_args.h"

namespace inplace::indexing {

namespace {

std::string opt_str(const Value& v) {
  return v.is_none() ? "None" : std::to_string(v.as_int(""));
}

Tensor slice_region(const Tensor& t, const Args& a) {
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
}

std::string slice_where(const Args& a) {
  return str_cat("dim ", a[2].as_int("slice_scatter"), ", start ", opt_str(a[3]), ", end ",
                 opt_str(a[4]), ", step ", a[5].as_int("slice_scatter"));
}

Tensor select_region(const Tensor& t, const Args& a) {
  const char* op = "select_scatter";
  IP_CHECK(t.dim() > 0, kInvalidArgument, "[select_scatter] self must have at least 1 dim");
  int64_t dim = wrap_dim(a[2].as_int(op), t.dim(), op);
  int64_t index = wrap_index(a[3].as_int(op), t.shape()[dim], dim, op);
  return t.select(dim, index);
}

std::string select_where(const Args& a) {
  return str_cat("dim ", a[2].as_int("select_scatter"), ", index ", a[3].as_int("select_scatter"));
}

Tensor diagonal_region(const Tensor& t, const Args& a) {
  const char* op = "diagonal_scatter";
  IP_CHECK(t.dim() >= 2, kInvalidArgument,
           "[diagonal_scatter] self must have at least 2 "
           "dims, got shape ",
           shape_str(t.shape()));
  return t.diagonal(a[2].as_int(op), a[3].as_int(op), a[4].as_int(op));
}

std::string diagonal_where(const Args& a) {
  return str_cat("offset ", a[2].as_int("diagonal_scatter"), ", dim1 ",
                 a[3].as_int("diagonal_scatter"), ", dim2 ", a[4].as_int("diagonal_scatter"));
}

Tensor as_strided_region(const Tensor& t, const Args& a) {
  const char* op = "as_strided_scatter";
  Shape size = a[2].as_int_list(op), stride = a[3].as_int_list(op);
  int64_t offset = a[4].is_none() ? 0 : a[4].as_int(op);
  IP_CHECK(size.size() == stride.size(), kInvalidArgument, "[", op, "] size ", shape_str(size),
           " and stride ", shape_str(stride), " differ in rank");
  int64_t last = offset;
  for (size_t i = 0; i < size.size(); ++i) {
    IP_CHECK(size[i] >= 0 && stride[i] >= 0, kInvalidArgument, "[", op,
             "] negative size or stride in ", shape_str(size), " / ", shape_str(stride));
    last += (size[i] - 1) * stride[i];
  }
  IP_CHECK(offset >= 0 && (numel_of(size) == 0 || last < t.numel()), kOutOfRange, "[", op,
           "] view ", shape_str(size), " with strides ", shape_str(stride), " at offset ", offset,
           " reaches past self ", shape_str(t.shape()), " of ", t.numel(), " elements");
  IP_CHECK(t.is_meta() || t.is_contiguous(), kInvalidArgument, "[", op,
           "] the result must be contiguous");
  return Tensor(t.storage(), t.offset() + offset, size, stride, t.dtype());
}

std::string as_strided_where(const Args& a) {
  return str_cat("size ", shape_str(a[2].as_int_list("as_strided_scatter")), ", stride ",
                 shape_str(a[3].as_int_list("as_strided_scatter")), ", storage_offset ",
                 opt_str(a[4]));
}

// Where the region is, for errors.
std::string where(ViewScatter kind, const Args& a) {
  switch (kind) {
    case ViewScatter::kSlice:
      return slice_where(a);
    case ViewScatter::kSelect:
      return select_where(a);
    case ViewScatter::kDiagonal:
      return diagonal_where(a);
    case ViewScatter::kAsStrided:
      break;
  }
  return as_strided_where(a);
}

}  // namespace

const char* view_scatter_name(ViewScatter kind) {
  switch (kind) {
    case ViewScatter::kSlice:
      return "slice_scatter";
    case ViewScatter::kSelect:
      return "select_scatter";
    case ViewScatter::kDiagonal:
      return "diagonal_scatter";
    case ViewScatter::kAsStrided:
      break;
  }
  return "as_strided_scatter";
}

Tensor view_scatter_region(ViewScatter kind, const Tensor& t, const Args& a) {
  switch (kind) {
    case ViewScatter::kSlice:
      return slice_region(t, a);
    case ViewScatter::kSelect:
      return select_region(t, a);
    case ViewScatter::kDiagonal:
      return diagonal_region(t, a);
    case ViewScatter::kAsStrided:
      break;
  }
  return as_strided_region(t, a);
}

Tensor checked_view_scatter_region(ViewScatter kind, const Tensor& t, const Tensor& self,
                                   const Tensor& src, const Args& a) {
  Tensor region = view_scatter_region(kind, t, a);
  IP_CHECK(region.shape() == src.shape(), kShapeMismatch, "[", view_scatter_name(kind),
           "] src shape ", shape_str(src.shape()), " does not match the region ",
           shape_str(region.shape()), " of self ", shape_str(self.shape()), " at ", where(kind, a));
  return region;
}

}  // namespace inplace::indexing
