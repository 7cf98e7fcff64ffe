// The device error flag's way to the host at the end of every call (cuda_executable.cpp): a
// one-warp kernel copies the flag (int32[4] device memory) into page-locked host memory, which
// the device writes through its mapping. Launched under programmatic dependent launch, it is
// resident before the call's last kernel ends and copies once that kernel's writes are visible:
// a copy-engine transfer there (cudaMemcpyAsync device to host) cost the step of every model
// about 3% on an H100 (docs/performance.md).
#pragma once
#include <cstdint>

namespace inplace::cuda {

// Enqueues on `stream` the copy of device_flag[0..4) into host_flag[0..4) (page-locked memory
// from DeviceRuntime::allocate_host).
void publish_errors(const int32_t* device_flag, int32_t* host_flag, void* stream);

}  // namespace inplace::cuda
