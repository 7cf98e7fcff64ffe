#include "tensor_bridge.h"

#include <memory>
#include <vector>

#include "dlpack_abi.h"

namespace inplace::python {

namespace {

constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kUsedCapsuleName = "used_dltensor";

DType dtype_from_dl(DLDataType t, const std::string& what) {
  IP_CHECK(t.lanes == 1, kDTypeMismatch, "[python] ", what, ": vector dtypes are not supported");
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 32) return DType::kFloat32;
      if (t.bits == 64) return DType::kFloat64;
      if (t.bits == 16) return DType::kFloat16;
      break;
    case kDLBfloat:
      if (t.bits == 16) return DType::kBFloat16;
      break;
    case kDLInt:
      if (t.bits == 64) return DType::kInt64;
      if (t.bits == 32) return DType::kInt32;
      if (t.bits == 16) return DType::kInt16;
      if (t.bits == 8) return DType::kInt8;
      break;
    case kDLUInt:
      if (t.bits == 8) return DType::kUInt8;
      break;
    case kDLBool:
      if (t.bits == 8) return DType::kBool;
      break;
  }
  IP_FAIL(kDTypeMismatch, "[python] ", what, ": DLPack dtype (code ", int(t.code), ", ",
          int(t.bits), " bits) has no inplace dtype");
}

DLDataType dtype_to_dl(DType t) {
  switch (t) {
    case DType::kFloat32:
      return {kDLFloat, 32, 1};
    case DType::kFloat64:
      return {kDLFloat, 64, 1};
    case DType::kFloat16:
      return {kDLFloat, 16, 1};
    case DType::kBFloat16:
      return {kDLBfloat, 16, 1};
    case DType::kInt64:
      return {kDLInt, 64, 1};
    case DType::kInt32:
      return {kDLInt, 32, 1};
    case DType::kInt16:
      return {kDLInt, 16, 1};
    case DType::kInt8:
      return {kDLInt, 8, 1};
    case DType::kUInt8:
    case DType::kBool:
      return {kDLUInt, 8, 1};
  }
  return {kDLUInt, 8, 1};
}

// What a capsule we made owns: the tensor (so its storage), and the shape/strides arrays.
struct Exported {
  DLManagedTensor managed{};
  Tensor tensor;
  std::vector<int64_t> shape, strides;
};

void delete_exported(DLManagedTensor* self) {
  delete static_cast<Exported*>(self->manager_ctx);
}

}  // namespace

Tensor tensor_from_dlpack(const pybind11::capsule& capsule, const std::string& what,
                          std::optional<DType> as_dtype) {
  IP_CHECK(std::string(capsule.name() ? capsule.name() : "") == kCapsuleName, kInvalidArgument,
           "[python] ", what, ": not an unused DLPack capsule");
  auto* managed = static_cast<DLManagedTensor*>(capsule.get_pointer());
  const DLTensor& dl = managed->dl_tensor;
  // The capsule is marked used at once: from here on the producer's reference (which keeps the
  // torch tensor's memory alive) is ours, released by `release` on a refusal or handed to the
  // tensor's storage below.
  PyCapsule_SetName(capsule.ptr(), kUsedCapsuleName);
  auto release = [&] {
    if (managed->deleter) managed->deleter(managed);
  };
  Device device;
  if (dl.device.device_type == kDLCUDA) {
    device = Device::cuda(dl.device.device_id);
  } else if (dl.device.device_type != kDLCPU) {
    int32_t type = dl.device.device_type;
    release();
    IP_FAIL(kInvalidArgument, "[python] ", what, " is on DLPack device type ", type,
            "; inplace takes cpu and cuda tensors");
  }
  DType dtype;
  try {
    dtype = dtype_from_dl(dl.dtype, what);
  } catch (...) {
    release();
    throw;
  }
  if (as_dtype) {
    if (dtype_size(*as_dtype) != dtype_size(dtype)) {
      release();
      IP_FAIL(kDTypeMismatch, "[python] ", what, ": cannot view ", dtype_name(dtype), " as ",
              dtype_name(*as_dtype));
    }
    dtype = *as_dtype;
  }
  Shape shape(dl.shape, dl.shape + dl.ndim);
  std::optional<Shape> strides;
  if (dl.strides) strides = Shape(dl.strides, dl.strides + dl.ndim);
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  if (numel_of(shape) == 0) {
    release();
    return Tensor::empty(shape, dtype, device);  // no memory to share (torch may give null)
  }
  // The storage owns the producer's reference: torch's memory lives as long as any tensor
  // viewing it (a bound input, a result that is a view of it, a capsule handed back to torch).
  std::shared_ptr<const void> owner(managed, [](const void* p) {
    auto* m = static_cast<DLManagedTensor*>(const_cast<void*>(p));
    if (m->deleter) m->deleter(m);
  });
  Tensor view = Tensor::borrow(data, shape, dtype, strides, device);
  return Tensor(Storage::borrow(data, view.storage()->nbytes(), std::move(owner), device), 0, shape,
                view.strides(), dtype);
}

pybind11::capsule tensor_to_dlpack(const Tensor& t) {
  IP_CHECK(t.defined() && !t.is_meta(), kInvalidArgument,
           "[python] an engine result has no data to hand to torch");
  auto* e = new Exported;
  e->tensor = t;
  e->shape = t.shape();
  e->strides = t.strides();
  DLTensor& dl = e->managed.dl_tensor;
  dl.data = t.data_ptr();
  dl.device = t.device().is_cpu() ? DLDevice{kDLCPU, 0} : DLDevice{kDLCUDA, t.device().index};
  dl.ndim = static_cast<int32_t>(t.dim());
  dl.dtype = dtype_to_dl(t.dtype());
  dl.shape = e->shape.data();
  dl.strides = e->strides.data();
  dl.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = delete_exported;
  // A capsule torch never consumed still frees what it owns.
  return pybind11::capsule(&e->managed, kCapsuleName, [](PyObject* cap) {
    if (std::string(PyCapsule_GetName(cap)) != kCapsuleName) return;
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, kCapsuleName));
    if (m && m->deleter) m->deleter(m);
  });
}

Tensor tensor_from_pair(const pybind11::handle& pair, const std::string& what) {
  auto t = pair.cast<pybind11::tuple>();
  bool is_bool = t[1].cast<bool>();
  return tensor_from_dlpack(t[0].cast<pybind11::capsule>(), what,
                            is_bool ? std::optional<DType>(DType::kBool) : std::nullopt);
}

pybind11::tuple tensor_to_pair(const Tensor& t, bool context_owned) {
  return pybind11::make_tuple(tensor_to_dlpack(t), t.dtype() == DType::kBool, context_owned);
}

}  // namespace inplace::python
