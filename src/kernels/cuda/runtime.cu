// The CUDA runtime behind device_runtime.h: streams, events, pinned memory, graph
// capture and replay, and the one-thread kernel that evaluates an engine's runtime scalars
// into device slots (so a decode step never reads its position on the host).
#include <cstring>

#include "backend/symbolic.h"
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/device_runtime.h"

namespace inplace::cuda {

namespace {

using Op = SymInstr::Op;

__device__ int64_t d_floor_div(int64_t x, int64_t y) {
  if (y == -1) return static_cast<int64_t>(0ull - static_cast<uint64_t>(x));
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
  return q;
}

__device__ int64_t d_mod(int64_t x, int64_t y) {
  if (y == -1) return 0;
  int64_t r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}

__device__ void raise(int32_t* error, int32_t kind, int32_t which) {
  if (atomicCAS(error, 0, kind) == 0) error[1] = which;
}

__device__ int64_t read_input(const DeviceScalarInput& in, int64_t e) {
  switch (static_cast<DType>(in.dtype)) {
    case DType::kInt64:
      return static_cast<const int64_t*>(in.data)[e];
    case DType::kInt32:
      return static_cast<const int32_t*>(in.data)[e];
    case DType::kInt16:
      return static_cast<const int16_t*>(in.data)[e];
    case DType::kInt8:
      return static_cast<const int8_t*>(in.data)[e];
    case DType::kUInt8:
      return static_cast<const uint8_t*>(in.data)[e];
    case DType::kBool:
      return static_cast<const uint8_t*>(in.data)[e] != 0;
    default:
      return 0;
  }
}

__global__ void eval_scalars_kernel(const int64_t* code, int64_t count,
                                    const DeviceScalarInput* inputs, int64_t* slots,
                                    int32_t* error) {
  pdl_begin();
  int64_t stack[kDeviceScalarStackDepth];
  int64_t pc = 1;  // code[0] is the count
  for (int64_t k = 0; k < count; ++k) {
    const int64_t n = code[pc++];
    int sp = 0;
    for (int64_t t = 0; t < n; ++t, pc += 3) {
      const Op op = static_cast<Op>(code[pc]);
      const int64_t a = code[pc + 1], b = code[pc + 2];
      int64_t y = 0, x = 0;
      if (op != Op::kConst && op != Op::kRead && op != Op::kScalar && op != Op::kDim &&
          op != Op::kNeg && sp >= 2) {
        y = stack[--sp];
        x = stack[--sp];
      }
      switch (op) {
        case Op::kConst:
          stack[sp++] = a;
          break;
        case Op::kRead: {
          const DeviceScalarInput& in = inputs[a];
          int64_t v = 0;
          if (b < 0 || b >= in.numel) {
            raise(error, kDeviceErrorRead, static_cast<int32_t>(k));
          } else {
            v = read_input(in, b);
            if (in.lo <= in.hi && (v < in.lo || v > in.hi))
              raise(error, kDeviceErrorRange, static_cast<int32_t>(a));
          }
          stack[sp++] = v;
          break;
        }
        case Op::kDim:  // never planned on the device (device_scalars.cpp)
          stack[sp++] = 0;
          break;
        case Op::kScalar:
          stack[sp++] = slots[a];
          break;
        case Op::kNeg:
          stack[sp - 1] = static_cast<int64_t>(0ull - static_cast<uint64_t>(stack[sp - 1]));
          break;
        case Op::kAdd:
          stack[sp++] = static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
          break;
        case Op::kSub:
          stack[sp++] = static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y));
          break;
        case Op::kMul:
          stack[sp++] = static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
          break;
        case Op::kFloorDiv:
        case Op::kMod:
          if (y == 0) {
            raise(error, kDeviceErrorDivision, static_cast<int32_t>(k));
            stack[sp++] = 0;
          } else {
            stack[sp++] = op == Op::kFloorDiv ? d_floor_div(x, y) : d_mod(x, y);
          }
          break;
        case Op::kMin:
          stack[sp++] = x < y ? x : y;
          break;
        case Op::kMax:
          stack[sp++] = x > y ? x : y;
          break;
      }
    }
    slots[k] = sp > 0 ? stack[sp - 1] : 0;
  }
}

void ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  IP_FAIL(kInternal, "[cuda] ", what, ": ", cudaGetErrorString(e));
}

class CudaRuntime final : public DeviceRuntime {
 public:
  void* create_stream() const override {
    cudaStream_t s = nullptr;
    ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "creating a stream");
    return s;
  }
  void destroy_stream(void* s) const override {
    if (s) cudaStreamDestroy(as_stream(s));
  }
  void* create_event() const override {
    cudaEvent_t e = nullptr;
    ok(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "creating an event");
    return e;
  }
  void destroy_event(void* e) const override {
    if (e) cudaEventDestroy(static_cast<cudaEvent_t>(e));
  }
  void record(void* e, void* s) const override {
    ok(cudaEventRecord(static_cast<cudaEvent_t>(e), as_stream(s)), "recording an event");
  }
  bool done(void* e) const override {
    const cudaError_t r = cudaEventQuery(static_cast<cudaEvent_t>(e));
    if (r == cudaErrorNotReady) {
      cudaGetLastError();
      return false;
    }
    ok(r, "querying an event");
    return true;
  }
  void wait_event(void* e) const override {
    ok(cudaEventSynchronize(static_cast<cudaEvent_t>(e)), "waiting for the device");
  }
  void synchronize(void* s) const override {
    ok(cudaStreamSynchronize(as_stream(s)), "waiting for a stream");
  }
  void stream_wait(void* s, void* e) const override {
    ok(cudaStreamWaitEvent(as_stream(s), static_cast<cudaEvent_t>(e), 0),
       "ordering a stream after an event");
  }
  void* allocate_host(size_t n) const override {
    void* p = nullptr;
    ok(cudaMallocHost(&p, n ? n : 16), "allocating pinned host memory");
    std::memset(p, 0, n ? n : 16);
    return p;
  }
  void release_host(void* p) const override {
    if (p) cudaFreeHost(p);
  }
  void copy_async(void* dst, const void* src, size_t n, void* s) const override {
    if (n) ok(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, as_stream(s)), "an async copy");
  }
  void begin_capture(void* s) const override {
    ok(cudaStreamBeginCapture(as_stream(s), cudaStreamCaptureModeRelaxed), "beginning a capture");
  }
  void* end_capture(void* s) const override {
    cudaGraph_t g = nullptr;
    ok(cudaStreamEndCapture(as_stream(s), &g), "ending a capture");
    cudaGraphExec_t exec = nullptr;
    const cudaError_t r = cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g);
    ok(r, "instantiating a graph");
    return exec;
  }
  void launch_graph(void* g, void* s) const override {
    ok(cudaGraphLaunch(static_cast<cudaGraphExec_t>(g), as_stream(s)), "launching a graph");
  }
  void destroy_graph(void* g) const override {
    if (g) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(g));
  }
  void eval_scalars(const int64_t* code, int64_t count, const DeviceScalarInput* inputs,
                    int64_t* slots, int32_t* error, void* s) const override {
    launch_pdl(eval_scalars_kernel, 1, 1, as_stream(s), code, count, inputs, slots, error);
    IP_CUDA_CHECK(cudaGetLastError(), "runtime scalars");
  }
};

}  // namespace

const DeviceRuntime& device_runtime() {
  static const CudaRuntime runtime;
  return runtime;
}

}  // namespace inplace::cuda
