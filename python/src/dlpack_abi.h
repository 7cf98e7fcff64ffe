// The DLPack ABI (version 0.x, what torch.utils.dlpack exchanges): the structs only, declared
// here so the extension builds without a DLPack package. The layout is fixed by the standard.
#pragma once
#include <cstdint>

extern "C" {

enum DLDeviceTypeCode : int32_t { kDLCPU = 1, kDLCUDA = 2 };
enum DLDataTypeCodeValue : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLBfloat = 4,
  kDLBool = 6
};

struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null means compact row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};
}
