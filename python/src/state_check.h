// The per-call check of a compiled module's state (python/inplace/state_watch.py), in C: is
// every module on the way to a bound tensor, and every bound tensor, what the last sync saw?
// True only when nothing a binding depends on (the tensor object, its data pointer, shape,
// strides, dtype) can have changed; anything else sends the caller to the Python full walk.
//
// A tensor's key is read without linking libtorch. Where the running torch's layout is known
// (TensorLayout, calibrated once on probe tensors against torch's own accessors), the check
// compares the words of the tensor's TensorImpl and StorageImpl that hold the storage, sizes,
// strides, storage offset, element count and dtype, and the storage's data pointer, with their
// values at the last index: a few loads per tensor. Otherwise it calls the tensor's data_ptr(),
// shape, stride() and dtype as the Python check did.
#pragma once
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace inplace::python {

// Where torch keeps a dense tensor's key (byte offsets), found by probing; `ok` false where
// the probe did not match (another torch layout): every tensor then takes the accessor path.
struct TensorLayout {
  bool ok = false;
  size_t impl_in_object = 0;   // the TensorImpl* in the Python tensor object
  size_t storage_in_impl = 0;  // the StorageImpl* in the TensorImpl
  size_t sizes_in_impl = 0;    // the dims count, then inline sizes and strides, offset, numel
  size_t region_bytes = 0;     // from sizes_in_impl through the word holding the dtype
  int64_t inline_dims = 0;     // dims kept inline (more: the accessor path)
  size_t data_in_storage = 0;  // the data pointer in the StorageImpl
  const void* impl_vtable = nullptr;  // a dense TensorImpl's (a subclass: the accessor path)
  const void* storage_vtable = nullptr;
  pybind11::tuple exact_types;  // the Python tensor types taken by the raw path
};

// `probe`: a float32 tensor of shape (3, 5, 7), strides (211, 37, 3), storage offset 101;
// `twin`: probe.view(torch.int32); `types`: the tensor types whose objects may be read raw.
TensorLayout calibrate_tensor_layout(const pybind11::object& probe, const pybind11::object& twin,
                                     const pybind11::tuple& types);

class StateCheck {
 public:
  // links: [(dict, key, child)]: dict[key] must be child. tensors: [(dict, key, tensor,
  // data_ptr, shape, stride, dtype)]: dict[key] must be tensor, with that key.
  StateCheck(const TensorLayout& layout, const pybind11::list& links,
             const pybind11::list& tensors);
  bool unchanged() const;
  size_t raw_tensors() const;  // how many tensors take the raw path (tests, docs)
  // The cyclic GC's view of what the check holds (a module that holds its compiled self makes
  // a cycle through it); once cleared, no call is unchanged.
  int traverse(visitproc visit, void* arg) const;
  void clear();

 private:
  struct Link {
    pybind11::object dict, key, child;
  };
  struct Record {
    pybind11::object dict, key, tensor, data_ptr, shape, stride, dtype;
    const char* impl = nullptr;  // null: the accessor path
    const char* storage = nullptr;
    const void* data = nullptr;
    std::vector<unsigned char> region;
  };
  bool raw_unchanged(const Record& r) const;
  bool accessors_unchanged(const Record& r) const;
  void take_raw(Record& r) const;

  TensorLayout layout_;
  bool cleared_ = false;
  std::vector<Link> links_;
  std::vector<Record> records_;
  pybind11::object data_ptr_name_, shape_name_, stride_name_, dtype_name_;
};

void bind_state_check(pybind11::module_& m);

}  // namespace inplace::python
