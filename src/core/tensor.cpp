#include "core/tensor.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>

#include "core/device_allocator.h"
#include "core/strided_loop.h"

namespace inplace {

int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : shape) {
    if (s == 0) return 0;
    overflow |= __builtin_mul_overflow(n, s, &n);
  }
  // A hostile or mistaken shape must not wrap around into a small, wrong element count.
  IP_CHECK(!overflow, kOutOfRange, "[shape] ", shape_str(shape),
           " has more elements than an int64 can count");
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape st(shape.size());
  int64_t acc = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    st[d] = acc;
    // Saturates: only a zero-element shape can get here with a product past int64.
    if (__builtin_mul_overflow(acc, std::max<int64_t>(shape[d], 1), &acc))
      acc = std::numeric_limits<int64_t>::max();
  }
  return st;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t n = std::max<int64_t>(ndim, 1);
  IP_CHECK(dim >= -n && dim < n, kOutOfRange, "[", op, "] dim ", dim,
           " out of range for a tensor of ", ndim, " dims");
  return dim < 0 ? dim + n : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    IP_CHECK(da == db || da == 1 || db == 1, kShapeMismatch, "[", op, "] shapes ", shape_str(a),
             " and ", shape_str(b), " cannot be broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_strides(const Tensor& t, const Shape& shape, const char* op) {
  IP_CHECK(t.dim() <= static_cast<int64_t>(shape.size()), kShapeMismatch, "[", op, "] shape ",
           shape_str(t.shape()), " cannot be broadcast to ", shape_str(shape));
  Shape st(shape.size(), 0);
  size_t lead = shape.size() - t.shape().size();
  for (size_t i = 0; i < t.shape().size(); ++i) {
    int64_t s = t.shape()[i];
    IP_CHECK(s == shape[lead + i] || s == 1, kShapeMismatch, "[", op, "] shape ",
             shape_str(t.shape()), " cannot be broadcast to ", shape_str(shape));
    st[lead + i] = (s == 1 && shape[lead + i] != 1) ? 0 : t.strides()[i];
  }
  return st;
}

Tensor::Tensor(std::shared_ptr<Storage> storage, int64_t offset, Shape shape, Shape strides,
               DType dtype)
    : storage_(std::move(storage)),
      offset_(offset),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      dtype_(dtype),
      dtype_set_(true) {
  IP_ASSERT(shape_.size() == strides_.size(), "shape and strides have the same rank");
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t s : shape)
    IP_CHECK(s >= 0, kInvalidArgument, "[empty] negative size in shape ", shape_str(shape));
  size_t nbytes = 0;
  IP_CHECK(
      !__builtin_mul_overflow(static_cast<size_t>(numel_of(shape)), dtype_size(dtype), &nbytes),
      kOutOfRange, "[empty] ", shape_str(shape), " ", dtype_name(dtype),
      " needs more bytes than a size_t can count");
  return Tensor(Storage::allocate(nbytes, device), 0, shape, contiguous_strides(shape), dtype);
}

Tensor Tensor::full(const Shape& shape, Scalar value, DType dtype) {
  Tensor t = empty(shape, dtype);
  t.fill(value);
  return t;
}

Tensor Tensor::borrow(void* data, const Shape& shape, DType dtype, std::optional<Shape> strides,
                      Device device) {
  Shape st = strides ? *strides : contiguous_strides(shape);
  int64_t extent = 0;
  for (size_t i = 0; i < shape.size(); ++i) extent += (shape[i] - 1) * st[i];
  size_t nbytes = numel_of(shape) == 0 ? 0 : static_cast<size_t>(extent + 1) * dtype_size(dtype);
  return Tensor(Storage::borrow(data, nbytes, device), 0, shape, st, dtype);
}

Tensor Tensor::meta(const Shape& shape, DType dtype, std::optional<Shape> strides, int64_t offset) {
  return Tensor(nullptr, offset, shape, strides ? *strides : contiguous_strides(shape), dtype);
}

// A 0-dim tensor has no dim to index (wrap_dim lets 0 and -1 through for scalars).
int64_t Tensor::size(int64_t d) const {
  IP_CHECK(dim() > 0, kOutOfRange, "[size] dim ", d, " requested of a 0-dim tensor");
  return shape_[wrap_dim(d, dim(), "size")];
}

int64_t Tensor::stride(int64_t d) const {
  IP_CHECK(dim() > 0, kOutOfRange, "[stride] dim ", d, " requested of a 0-dim tensor");
  return strides_[wrap_dim(d, dim(), "stride")];
}

void* Tensor::data_ptr() const {
  IP_CHECK(storage_ != nullptr, kInvalidArgument, "[tensor] a meta tensor has no data");
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(itemsize());
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    if (shape_[d] == 1) continue;
    if (shape_[d] == 0) return true;
    if (strides_[d] != expected) return false;
    expected *= shape_[d];
  }
  return true;
}

bool Tensor::same_view(const Tensor& o) const {
  return storage_ == o.storage_ && offset_ == o.offset_ && shape_ == o.shape_ &&
         strides_ == o.strides_ && dtype_ == o.dtype_;
}

bool Tensor::may_overlap(const Tensor& o) const {
  if (!same_storage(o) || numel() == 0 || o.numel() == 0) return false;
  auto range = [](const Tensor& t) {
    int64_t lo = t.offset_ * static_cast<int64_t>(t.itemsize()), hi = lo;
    for (int64_t d = 0; d < t.dim(); ++d) {
      int64_t span = (t.shape_[d] - 1) * t.strides_[d] * static_cast<int64_t>(t.itemsize());
      (span < 0 ? lo : hi) += span;
    }
    return std::make_pair(lo, hi + static_cast<int64_t>(t.itemsize()));
  };
  auto [a0, a1] = range(*this);
  auto [b0, b1] = range(o);
  return a0 < b1 && b0 < a1;
}

// ---------------------------------------------------------------- views

Tensor Tensor::as_strided(const Shape& shape, const Shape& strides,
                          std::optional<int64_t> offset) const {
  IP_CHECK(shape.size() == strides.size(), kInvalidArgument, "[as_strided] shape ",
           shape_str(shape), " and strides ", shape_str(strides), " differ in rank");
  int64_t off = offset ? *offset : offset_;
  IP_CHECK(off >= 0, kOutOfRange, "[as_strided] negative storage offset ", off);
  // Checked for metas too: a negative size or stride must never reach a plan.
  for (size_t i = 0; i < shape.size(); ++i)
    IP_CHECK(shape[i] >= 0 && strides[i] >= 0, kInvalidArgument,
             "[as_strided] negative size or stride in ", shape_str(shape), " / ",
             shape_str(strides));
  if (storage_ && numel_of(shape) > 0) {
    int64_t last = off;
    bool overflow = false;
    for (size_t i = 0; i < shape.size(); ++i) {
      int64_t span = 0;
      overflow |= __builtin_mul_overflow(shape[i] - 1, strides[i], &span);
      overflow |= __builtin_add_overflow(last, span, &last);
    }
    IP_CHECK(!overflow && static_cast<size_t>(last + 1) * itemsize() <= storage_->nbytes(),
             kOutOfRange, "[as_strided] view ", shape_str(shape), " with strides ",
             shape_str(strides), " at offset ", off, " reaches past the storage of ",
             storage_->nbytes() / itemsize(), " elements");
  }
  return Tensor(storage_, off, shape, strides, dtype_);
}

namespace {
Shape infer_size(Shape shape, int64_t numel, const char* op) {
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      IP_CHECK(infer < 0, kInvalidArgument, "[", op, "] only one dimension can be inferred");
      infer = static_cast<int64_t>(i);
    } else {
      IP_CHECK(shape[i] >= 0, kInvalidArgument, "[", op, "] invalid shape dimension ", shape[i]);
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    IP_CHECK(known != 0 && numel % known == 0, kShapeMismatch, "[", op, "] shape ",
             shape_str(shape), " is invalid for input of size ", numel);
    shape[infer] = numel / known;
  } else {
    IP_CHECK(known == numel, kShapeMismatch, "[", op, "] shape ", shape_str(shape),
             " is invalid for input of size ", numel);
  }
  return shape;
}

// ATen's computeStride: strides for viewing (old_shape, old_strides) as new_shape, if possible.
std::optional<Shape> compute_view_strides(const Shape& old_shape, const Shape& old_strides,
                                          const Shape& new_shape) {
  if (old_shape.empty()) return Shape(new_shape.size(), 1);
  int64_t numel = numel_of(old_shape);
  if (numel == 0 && old_shape == new_shape) return old_strides;
  Shape new_strides(new_shape.size(), 0);
  if (numel == 0) return contiguous_strides(new_shape);
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    if (d == 0 ||
        (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = old_strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}
}  // namespace

Tensor Tensor::view(Shape shape) const {
  shape = infer_size(std::move(shape), numel(), "view");
  auto st = compute_view_strides(shape_, strides_, shape);
  IP_CHECK(st.has_value(), kInvalidArgument, "[view] size ", shape_str(shape),
           " is not compatible with input of shape ", shape_str(shape_), " and strides ",
           shape_str(strides_), "; use reshape");
  return Tensor(storage_, offset_, shape, *st, dtype_);
}

bool Tensor::can_view(const Shape& shape) const {
  return compute_view_strides(shape_, strides_, infer_size(shape, numel(), "reshape")).has_value();
}

Tensor Tensor::reshape(Shape shape) const {
  shape = infer_size(std::move(shape), numel(), "reshape");
  auto st = compute_view_strides(shape_, strides_, shape);
  if (st) return Tensor(storage_, offset_, shape, *st, dtype_);
  if (!storage_) return meta(shape, dtype_);  // a meta has no data to copy
  return clone().view(shape);
}

Tensor Tensor::permute(std::vector<int64_t> dims) const {
  IP_CHECK(static_cast<int64_t>(dims.size()) == dim(), kInvalidArgument, "[permute] ", dims.size(),
           " dims given for a tensor of ", dim(), " dims");
  Shape sh(dims.size()), st(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], dim(), "permute");
    IP_CHECK(!seen[d], kInvalidArgument, "[permute] dim ", d, " repeated");
    seen[d] = true;
    sh[i] = shape_[d];
    st[i] = strides_[d];
  }
  return Tensor(storage_, offset_, sh, st, dtype_);
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  if (dim() == 0) return *this;
  d0 = wrap_dim(d0, dim(), "transpose");
  d1 = wrap_dim(d1, dim(), "transpose");
  Shape sh = shape_, st = strides_;
  std::swap(sh[d0], sh[d1]);
  std::swap(st[d0], st[d1]);
  return Tensor(storage_, offset_, sh, st, dtype_);
}

Tensor Tensor::t() const {
  IP_CHECK(dim() <= 2, kInvalidArgument, "[t] expects a tensor of <= 2 dims, got ", dim());
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::slice(int64_t d, std::optional<int64_t> start, std::optional<int64_t> end,
                     int64_t step) const {
  IP_CHECK(dim() > 0, kInvalidArgument, "[slice] cannot slice a 0-dim tensor");
  d = wrap_dim(d, dim(), "slice");
  IP_CHECK(step > 0, kInvalidArgument, "[slice] step must be positive, got ", step);
  int64_t n = shape_[d];
  int64_t s = start.value_or(0), e = end.value_or(n);
  if (s < 0) s += n;
  if (e < 0) e += n;
  s = std::clamp<int64_t>(s, 0, n);
  e = std::clamp<int64_t>(e, s, n);
  Shape sh = shape_, st = strides_;
  sh[d] = e > s ? (e - s - 1) / step + 1 : 0;  // no overflow for huge steps
  // torch's stride is stride * step; a step so large that this overflows leaves at most one
  // element, for which any stride gives the same view.
  if (__builtin_mul_overflow(strides_[d], step, &st[d])) st[d] = strides_[d];
  return Tensor(storage_, offset_ + s * strides_[d], sh, st, dtype_);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  IP_CHECK(dim() > 0, kInvalidArgument, "[select] cannot select from a 0-dim tensor");
  d = wrap_dim(d, dim(), "select");
  int64_t n = shape_[d];
  IP_CHECK(index >= -n && index < n, kOutOfRange, "[select] index ", index,
           " is out of bounds for dim ", d, " of size ", n);
  if (index < 0) index += n;
  Shape sh = shape_, st = strides_;
  sh.erase(sh.begin() + d);
  st.erase(st.begin() + d);
  return Tensor(storage_, offset_ + index * strides_[d], sh, st, dtype_);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  IP_CHECK(dim() > 0, kInvalidArgument, "[narrow] cannot narrow a 0-dim tensor");
  d = wrap_dim(d, dim(), "narrow");
  int64_t n = shape_[d];
  if (start < 0) start += n;
  IP_CHECK(start >= 0 && start <= n && length >= 0 && length <= n - start, kOutOfRange,
           "[narrow] start ", start, " + length ", length, " exceeds dim ", d, " of size ", n);
  return slice(d, start, start + length, 1);
}

Tensor Tensor::expand(Shape shape) const {
  IP_CHECK(shape.size() >= shape_.size(), kShapeMismatch, "[expand] cannot expand ",
           shape_str(shape_), " to ", shape_str(shape));
  size_t lead = shape.size() - shape_.size();
  Shape st(shape.size(), 0);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i < lead) {
      IP_CHECK(shape[i] >= 0, kShapeMismatch, "[expand] -1 not allowed in leading dim ", i);
      continue;
    }
    int64_t s = shape_[i - lead];
    if (shape[i] == -1) shape[i] = s;
    IP_CHECK(shape[i] >= 0, kShapeMismatch, "[expand] the expanded size ", shape[i], " at dim ", i,
             " is not allowed (", shape_str(shape_), " to ", shape_str(shape), ")");
    IP_CHECK(s == shape[i] || s == 1, kShapeMismatch, "[expand] the expanded size ", shape[i],
             " must match the existing size ", s, " at dim ", i, " (", shape_str(shape_), " to ",
             shape_str(shape), ")");
    st[i] = (s == shape[i]) ? strides_[i - lead] : 0;
  }
  return Tensor(storage_, offset_, shape, st, dtype_);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape sh = shape_, st = strides_;
  int64_t s = d < dim() ? shape_[d] * strides_[d] : 1;
  sh.insert(sh.begin() + d, 1);
  st.insert(st.begin() + d, s);
  return Tensor(storage_, offset_, sh, st, dtype_);
}

Tensor Tensor::squeeze() const {
  Shape sh, st;
  for (int64_t d = 0; d < dim(); ++d)
    if (shape_[d] != 1) sh.push_back(shape_[d]), st.push_back(strides_[d]);
  return Tensor(storage_, offset_, sh, st, dtype_);
}

Tensor Tensor::squeeze(const std::vector<int64_t>& dims) const {
  std::vector<bool> drop(dim(), false);
  for (int64_t d : dims) {
    if (dim() == 0) continue;
    int64_t w = wrap_dim(d, dim(), "squeeze");
    if (shape_[w] == 1) drop[w] = true;
  }
  Shape sh, st;
  for (int64_t d = 0; d < dim(); ++d)
    if (!drop[d]) sh.push_back(shape_[d]), st.push_back(strides_[d]);
  return Tensor(storage_, offset_, sh, st, dtype_);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  start_dim = wrap_dim(start_dim, dim(), "flatten");
  end_dim = wrap_dim(end_dim, dim(), "flatten");
  IP_CHECK(start_dim <= end_dim, kInvalidArgument, "[flatten] start_dim ", start_dim,
           " after end_dim ", end_dim);
  Shape sh(shape_.begin(), shape_.begin() + start_dim);
  int64_t m = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) m *= shape_[d];
  sh.push_back(m);
  sh.insert(sh.end(), shape_.begin() + end_dim + 1, shape_.end());
  return reshape(sh);
}

Tensor Tensor::unflatten(int64_t d, Shape sizes) const {
  IP_CHECK(dim() > 0, kInvalidArgument, "[unflatten] cannot unflatten a 0-dim tensor");
  d = wrap_dim(d, dim(), "unflatten");
  sizes = infer_size(std::move(sizes), shape_[d], "unflatten");
  Shape sh(shape_.begin(), shape_.begin() + d);
  sh.insert(sh.end(), sizes.begin(), sizes.end());
  sh.insert(sh.end(), shape_.begin() + d + 1, shape_.end());
  return view(sh);
}

Tensor Tensor::diagonal(int64_t off, int64_t d1, int64_t d2) const {
  d1 = wrap_dim(d1, dim(), "diagonal");
  d2 = wrap_dim(d2, dim(), "diagonal");
  IP_CHECK(d1 != d2, kInvalidArgument, "[diagonal] dim1 and dim2 are both ", d1);
  int64_t start = offset_, len;
  if (off >= 0) {
    len = std::max<int64_t>(std::min(shape_[d1], shape_[d2] - off), 0);
    if (len > 0) start += off * strides_[d2];
  } else {
    len = std::max<int64_t>(std::min(shape_[d1] + off, shape_[d2]), 0);
    if (len > 0) start -= off * strides_[d1];
  }
  Shape sh, st;
  for (int64_t d = 0; d < dim(); ++d)
    if (d != d1 && d != d2) sh.push_back(shape_[d]), st.push_back(strides_[d]);
  sh.push_back(len);
  st.push_back(strides_[d1] + strides_[d2]);
  return Tensor(storage_, start, sh, st, dtype_);
}

std::vector<Tensor> Tensor::split(int64_t split_size, int64_t d) const {
  IP_CHECK(dim() > 0, kInvalidArgument, "[split] cannot split a 0-dim tensor");
  d = wrap_dim(d, dim(), "split");
  IP_CHECK(split_size > 0 || shape_[d] == 0, kInvalidArgument,
           "[split] split_size must be "
           "positive, got ",
           split_size);
  std::vector<Tensor> out;
  int64_t n = shape_[d];
  if (n == 0) return {*this};
  for (int64_t s = 0; s < n;) {
    int64_t len = std::min(split_size, n - s);  // no overflow for huge split sizes
    out.push_back(slice(d, s, s + len));
    s += len;
  }
  return out;
}

std::vector<Tensor> Tensor::split_with_sizes(const std::vector<int64_t>& sizes, int64_t d) const {
  IP_CHECK(dim() > 0, kInvalidArgument, "[split_with_sizes] cannot split a 0-dim tensor");
  d = wrap_dim(d, dim(), "split_with_sizes");
  int64_t total = 0;
  for (int64_t s : sizes) {
    IP_CHECK(s >= 0, kInvalidArgument, "[split_with_sizes] negative size in ", shape_str(sizes));
    total += s;
  }
  IP_CHECK(total == shape_[d], kShapeMismatch, "[split_with_sizes] sizes ", shape_str(sizes),
           " do not sum to dim ", d, " of size ", shape_[d]);
  std::vector<Tensor> out;
  int64_t s0 = 0;
  for (int64_t s : sizes) {
    out.push_back(slice(d, s0, s0 + s));
    s0 += s;
  }
  return out;
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
  IP_CHECK(chunks > 0, kInvalidArgument, "[chunk] chunks must be positive, got ", chunks);
  IP_CHECK(dim() > 0, kInvalidArgument, "[chunk] cannot chunk a 0-dim tensor");
  d = wrap_dim(d, dim(), "chunk");
  // As torch: an empty dim still gives `chunks` (empty) pieces.
  if (shape_[d] == 0) return split_with_sizes(std::vector<int64_t>(chunks, 0), d);
  int64_t size = shape_[d] / chunks + (shape_[d] % chunks != 0);
  return split(std::max<int64_t>(size, 1), d);
}

std::vector<Tensor> Tensor::unbind(int64_t d) const {
  IP_CHECK(dim() > 0, kInvalidArgument, "[unbind] cannot unbind a 0-dim tensor");
  d = wrap_dim(d, dim(), "unbind");
  std::vector<Tensor> out;
  for (int64_t i = 0; i < shape_[d]; ++i) out.push_back(select(d, i));
  return out;
}

// ---------------------------------------------------------------- data

Tensor Tensor::contiguous() const {
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape_, dtype_);
  out.copy_from(*this);
  return out;
}

Tensor Tensor::to_device(Device device) const {
  IP_CHECK(defined() && !is_meta(), kInvalidArgument, "[to_device] needs a tensor with data");
  const Device from = this->device();
  if (from.is_cpu()) {
    Tensor host = contiguous();
    if (device.is_cpu()) return host.same_storage(*this) ? clone() : host;
    Tensor out = empty(shape_, dtype_, device);
    device_allocator(device).copy_from_host(out.data_ptr(), host.data_ptr(), host.nbytes());
    return out;
  }
  // Off the host: bring the bytes the view spans to the host, gather there, then move on.
  int64_t lo = 0, hi = 0;
  for (size_t d = 0; d < shape_.size(); ++d) {
    if (shape_[d] == 0) return empty(shape_, dtype_, device);
    (strides_[d] < 0 ? lo : hi) += (shape_[d] - 1) * strides_[d];
  }
  Tensor span = empty({hi - lo + 1}, dtype_);
  device_allocator(from).copy_to_host(
      span.data_ptr(), static_cast<const char*>(data_ptr()) + lo * static_cast<int64_t>(itemsize()),
      span.nbytes());
  Tensor host = Tensor(span.storage(), -lo, shape_, strides_, dtype_).contiguous();
  return device.is_cpu() ? host : host.to_device(device);
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  Tensor out = empty(shape_, dtype);
  out.copy_from(*this);
  return out;
}

void Tensor::copy_from(const Tensor& src) const {
  Shape sst = broadcast_strides(src, shape_, "copy_");
  // Copying a view onto itself is a no-op: scatter kernels whose result aliases `self`
  // (the engine's in-place path) skip their copy of self this way.
  if (numel() == 0 || src.same_view(*this)) return;
  // A source overlapping the destination is staged through a temporary first.
  if (src.may_overlap(*this) && !src.same_view(*this)) {
    copy_from(src.clone());
    return;
  }
  char* dst_base = static_cast<char*>(data_ptr());
  const char* src_base = static_cast<const char*>(src.data_ptr());
  if (src.dtype_ == dtype_ && is_contiguous() && src.is_contiguous() && src.shape_ == shape_) {
    std::memmove(dst_base, src_base, nbytes());
    return;
  }
  visit_dtype(dtype_, [&]<typename D>() {
    visit_dtype(src.dtype_, [&]<typename S>() {
      D* dp = reinterpret_cast<D*>(dst_base);
      const S* sp = reinterpret_cast<const S*>(src_base);
      strided_loop<2>(shape_, {strides_, sst}, [&](auto off, int64_t n, auto st) {
        D* d = dp + off[0];
        const S* s = sp + off[1];
        for (int64_t i = 0; i < n; ++i) d[i * st[0]] = convert<D>(s[i * st[1]]);
      });
    });
  });
}

void Tensor::fill(Scalar value) const {
  if (numel() == 0) return;
  visit_dtype(dtype_, [&]<typename T>() {
    T v = value.to<T>();
    T* p = data<T>();
    strided_loop<1>(shape_, {strides_}, [&](auto off, int64_t n, auto st) {
      for (int64_t i = 0; i < n; ++i) p[off[0] + i * st[0]] = v;
    });
  });
}

Scalar Tensor::item() const {
  IP_CHECK(numel() == 1, kInvalidArgument, "[item] a tensor with ", numel(),
           " elements cannot be converted to a scalar");
  return visit_dtype(dtype_, [&]<typename T>() -> Scalar {
    T v = *data<T>();
    if constexpr (std::is_same_v<T, bool>)
      return Scalar(v);
    else if constexpr (std::is_floating_point_v<T>)
      return Scalar(static_cast<double>(v));
    else if constexpr (kIsFloat<T>)
      return Scalar(static_cast<double>(static_cast<float>(v)));
    else
      return Scalar(static_cast<int64_t>(v));
  });
}

double Tensor::at(int64_t flat) const {
  int64_t off = 0;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    off += (flat % shape_[d]) * strides_[d];
    flat /= shape_[d];
  }
  return visit_dtype(dtype_, [&]<typename T>() -> double {
    T v = data<T>()[off];
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      return static_cast<float>(v);
    else
      return static_cast<double>(v);
  });
}

std::vector<double> Tensor::to_double_vector() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) out[i] = at(i);
  return out;
}

std::string Tensor::to_string(int64_t max_elements) const {
  std::ostringstream os;
  os << "tensor(" << dtype_name(dtype_) << shape_str(shape_);
  if (storage_) {
    os << " [";
    int64_t n = std::min(numel(), max_elements);
    for (int64_t i = 0; i < n; ++i) os << (i ? ", " : "") << at(i);
    if (numel() > n) os << ", ...";
    os << "]";
  }
  os << ")";
  return os.str();
}

}  // namespace inplace
