// Tensor = storage + element offset + shape + strides + dtype. Views share storage, so a
// write through any view is seen through its base and every other view (PyTorch semantics).
// A tensor with no storage is a "meta" tensor: shape work runs on it without data.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/scalar.h"
#include "core/storage.h"

namespace inplace {

using Shape = std::vector<int64_t>;

int64_t numel_of(const Shape& shape);
Shape contiguous_strides(const Shape& shape);
// Wraps a possibly negative dim into [0, ndim); `op` names the caller in the error.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
// torch broadcasting of two shapes; `op` names the caller in the error.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

class Tensor {
 public:
  Tensor() = default;  // undefined
  Tensor(std::shared_ptr<Storage> storage, int64_t offset, Shape shape, Shape strides, DType dtype);

  // Owned, contiguous, zero-filled, on `device`.
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype) { return empty(shape, dtype); }
  static Tensor full(const Shape& shape, Scalar value, DType dtype);
  static Tensor scalar(Scalar value, DType dtype) { return full({}, value, dtype); }
  // Wraps a caller's memory without copying (contiguous unless strides are given).
  static Tensor borrow(void* data, const Shape& shape, DType dtype,
                       std::optional<Shape> strides = std::nullopt, Device device = Device::cpu());
  // Shape and dtype only, no data: for shape inference and planning.
  static Tensor meta(const Shape& shape, DType dtype, std::optional<Shape> strides = std::nullopt,
                     int64_t offset = 0);
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);

  bool defined() const { return dtype_set_; }
  bool is_meta() const { return defined() && !storage_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return numel_of(shape_); }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t offset() const { return offset_; }
  DType dtype() const { return dtype_; }
  size_t itemsize() const { return dtype_size(dtype_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * itemsize(); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  // Where the bytes live (a meta tensor reports cpu). Element access (data<T>(), at(), item(),
  // copy_from, fill) is for cpu tensors; move others with to_device().
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }

  // Address of element 0 (the view's first element).
  void* data_ptr() const;
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_ptr());
  }

  bool is_contiguous() const;
  bool same_storage(const Tensor& other) const { return storage_ && storage_ == other.storage_; }
  // Same storage, offset, shape and strides: the very same view.
  bool same_view(const Tensor& other) const;
  // Whether any element of this tensor's memory range can overlap the other's.
  bool may_overlap(const Tensor& other) const;

  // ---- views (share storage) ----
  Tensor as_strided(const Shape& shape, const Shape& strides, std::optional<int64_t> offset) const;
  Tensor view(Shape shape) const;           // errors if strides do not allow it, as torch
  Tensor reshape(Shape shape) const;        // a view when strides allow, else a copy
  bool can_view(const Shape& shape) const;  // reshape(shape) would be a view
  Tensor permute(std::vector<int64_t> dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;
  Tensor slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
               int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor expand(Shape shape) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze() const;
  Tensor squeeze(const std::vector<int64_t>& dims) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, Shape sizes) const;
  Tensor diagonal(int64_t offset = 0, int64_t d1 = 0, int64_t d2 = 1) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split_with_sizes(const std::vector<int64_t>& sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  Tensor alias() const { return *this; }

  // ---- data ----
  Tensor contiguous() const;     // this tensor if already contiguous
  Tensor clone() const;          // always a fresh contiguous copy
  Tensor to(DType dtype) const;  // this tensor if already of dtype
  // A contiguous copy on `device` (this tensor's view, gathered first when not contiguous).
  Tensor to_device(Device device) const;
  // Copies src into this tensor, broadcasting src and converting its dtype.
  void copy_from(const Tensor& src) const;
  void fill(Scalar value) const;
  Scalar item() const;
  // Element at a flat (row-major) index, as double: for tests and printing.
  double at(int64_t flat_index) const;
  std::vector<double> to_double_vector() const;
  std::string to_string(int64_t max_elements = 64) const;

 private:
  std::shared_ptr<Storage> storage_;
  int64_t offset_ = 0;
  Shape shape_, strides_;
  DType dtype_ = DType::kFloat32;
  bool dtype_set_ = false;
};

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  Tensor t = empty(shape, dtype_of<T>());
  IP_CHECK(static_cast<int64_t>(values.size()) == t.numel(), kShapeMismatch, "[tensor] ",
           values.size(), " values do not fill shape ", shape_str(shape));
  T* d = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) d[i] = values[i];
  return t;
}

}  // namespace inplace
