// What the CUDA executable needs from the CUDA runtime beyond kernels and memory: streams and
// events, asynchronous copies, graph capture and replay, and the device-side evaluation of
// runtime scalars (runtime.cu), behind plain C++ so that the executable's .cpp files are
// compiled without CUDA headers. Handles are opaque pointers of that runtime.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/device.h"
#include "core/tensor.h"

namespace inplace::cuda {

// One input a device scalar program reads: its memory, dtype and element count, and the range
// its value must lie in (checked on the device; lo > hi when none was declared).
struct DeviceScalarInput {
  const void* data = nullptr;
  int32_t dtype = 0;  // DType as an int
  int64_t numel = 0;
  int64_t lo = 1, hi = 0;
};

// The error flag a context's kernels write (int32[4] in device memory, zero when no error):
// [0] the kind, [1] the step or scalar it names, set once by the first error of a call.
enum DeviceErrorKind : int32_t {
  kDeviceErrorNone = 0,
  kDeviceErrorPosition = 1,  // an index/position outside the indexed dim (step [1])
  kDeviceErrorRead = 2,      // a scalar read an element past its input's end (scalar [1])
  kDeviceErrorRange = 3,     // an input value outside its declared range (input [1])
  kDeviceErrorDivision = 4,  // division or modulo by zero (scalar [1])
};

// The deepest evaluation stack a device scalar program may use.
constexpr int kDeviceScalarStackDepth = 32;

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  virtual void* create_stream() const = 0;
  virtual void destroy_stream(void* stream) const = 0;
  virtual void* create_event() const = 0;
  virtual void destroy_event(void* event) const = 0;
  virtual void record(void* event, void* stream) const = 0;
  // True when all work before the event's record has completed (never waits).
  virtual bool done(void* event) const = 0;
  virtual void wait_event(void* event) const = 0;    // blocks the host
  virtual void synchronize(void* stream) const = 0;  // blocks the host until `stream` is idle
  // Work enqueued on `stream` after this call waits for `event` (on the device, not the host).
  virtual void stream_wait(void* stream, void* event) const = 0;
  // Page-locked host memory (for asynchronous copies to the host).
  virtual void* allocate_host(size_t nbytes) const = 0;
  virtual void release_host(void* p) const = 0;
  // Enqueued on `stream`; either side may be host or device memory.
  virtual void copy_async(void* dst, const void* src, size_t nbytes, void* stream) const = 0;
  // Graphs: everything enqueued on `stream` between begin and end becomes one executable graph.
  virtual void begin_capture(void* stream) const = 0;
  virtual void* end_capture(void* stream) const = 0;
  virtual void launch_graph(void* graph, void* stream) const = 0;
  virtual void destroy_graph(void* graph) const = 0;
  // Evaluates `count` scalar programs (`code`: device memory, `code_len` int64 of the encoding
  // of device_scalars.h) into `slots` (int64 device memory), reading `inputs` (device memory,
  // DeviceScalarInput each); errors go to `error`. One small kernel: a block evaluates the
  // independent programs at once, from shared memory.
  virtual void eval_scalars(const int64_t* code, int64_t code_len, int64_t count,
                            const DeviceScalarInput* inputs, int64_t* slots, int32_t* error,
                            void* stream) const = 0;
};

// A kernel that makes a device temporary calls keep_for_graph(t): while a context captures a
// graph on this thread, the temporary lives as long as that graph (whose replays use it);
// otherwise it is a no-op. The context sets the list around its capture.
void keep_for_graph(const Tensor& t);
void set_graph_keep_alive(std::vector<Tensor>* list);

// The CUDA runtime (runtime.cu).
const DeviceRuntime& device_runtime();

}  // namespace inplace::cuda
