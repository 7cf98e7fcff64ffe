// The CUDA runtime behind device_runtime.h: streams, events, pinned memory, graph
// capture and replay, and the kernel that evaluates an engine's runtime scalars into device
// slots (so a decode step never reads its position on the host).
#include <cstring>

#include "backend/symbolic.h"
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/device_runtime.h"
#include "kernels/cuda/publish_errors.h"

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

// Where a program reads another scalar's slot that is not ready yet (the parallel evaluator).
constexpr int64_t kNotReady = -1;

// Evaluates one scalar program (n instructions at p) on the stack; scalar slot reads go through
// slot(a), which returns false when slot a is not ready (the program then stops: kNotReady).
// The first error the program meets is kept in (*kind, *which); the value is returned in *out.
template <typename Slot>
__device__ int64_t eval_program(const int64_t* p, int64_t n, int64_t k,
                                const DeviceScalarInput* inputs, Slot&& slot, int64_t* out,
                                int32_t* kind, int32_t* which) {
  int64_t stack[kDeviceScalarStackDepth];
  int sp = 0;
  auto fail = [&](int32_t kd, int32_t w) {
    if (*kind == kDeviceErrorNone) {
      *kind = kd;
      *which = w;
    }
  };
  for (int64_t t = 0; t < n; ++t, p += 3) {
    const Op op = static_cast<Op>(p[0]);
    const int64_t a = p[1], b = p[2];
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
          fail(kDeviceErrorRead, static_cast<int32_t>(k));
        } else {
          v = read_input(in, b);
          if (in.lo <= in.hi && (v < in.lo || v > in.hi))
            fail(kDeviceErrorRange, static_cast<int32_t>(a));
        }
        stack[sp++] = v;
        break;
      }
      case Op::kDim:  // never planned on the device (device_scalars.cpp)
        stack[sp++] = 0;
        break;
      case Op::kScalar: {
        int64_t v = 0;
        if (!slot(a, &v)) return kNotReady;
        stack[sp++] = v;
        break;
      }
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
          fail(kDeviceErrorDivision, static_cast<int32_t>(k));
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
  *out = sp > 0 ? stack[sp - 1] : 0;
  return 0;
}

// Programs and scalars one block evaluates from shared memory; larger plans take the one-thread
// evaluator.
constexpr int64_t kSharedCode = 3072;
constexpr int kSharedScalars = 256;
constexpr int kEvalThreads = 128;

// Every program by one thread, in order, reading the code where it lies.
__global__ void eval_scalars_serial_kernel(const int64_t* code, int64_t count,
                                           const DeviceScalarInput* inputs, int64_t* slots,
                                           int32_t* error) {
  pdl_begin();
  int64_t pc = 1;  // code[0] is the count
  for (int64_t k = 0; k < count; ++k) {
    const int64_t n = code[pc++];
    int32_t kind = kDeviceErrorNone, which = 0;
    int64_t v = 0;
    eval_program(
        code + pc, n, k, inputs,
        [&](int64_t a, int64_t* out) {
          *out = slots[a];
          return true;
        },
        &v, &kind, &which);
    if (kind != kDeviceErrorNone) raise(error, kind, which);
    slots[k] = v;
    pc += 3 * n;
  }
}

// The same values and the same first error, the programs spread over a block: the code is
// copied into shared memory (it is constant, so before the wait for the previous kernel), one
// thread finds where each program starts, then in rounds every thread evaluates its programs
// whose scalar reads were ready before the round, until all are done; the first error in program
// order is raised, as the one-thread evaluator raises it.
__global__ void __launch_bounds__(kEvalThreads)
    eval_scalars_kernel(const int64_t* code, int64_t code_len, int64_t count,
                        const DeviceScalarInput* inputs, int64_t* slots, int32_t* error) {
  __shared__ int64_t s_code[kSharedCode];
  __shared__ int64_t s_value[kSharedScalars];
  __shared__ int32_t s_start[kSharedScalars], s_kind[kSharedScalars], s_which[kSharedScalars];
  __shared__ bool s_ready[kSharedScalars], s_new[kSharedScalars];
  __shared__ int s_pending;
  pdl_trigger();
  for (int64_t i = threadIdx.x; i < code_len; i += blockDim.x) s_code[i] = code[i];
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) s_ready[k] = s_new[k] = false;
  __syncthreads();
  if (threadIdx.x == 0) {
    int64_t pc = 1;  // code[0] is the count
    for (int64_t k = 0; k < count; ++k) {
      s_start[k] = static_cast<int32_t>(pc);
      pc += 1 + 3 * s_code[pc];
    }
  }
  pdl_wait();
  bool more = true;
  while (more) {
    __syncthreads();  // the last round's ready flags (and the starts) are visible
    if (threadIdx.x == 0) s_pending = 0;
    __syncthreads();
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
      if (s_ready[k]) continue;
      int32_t kind = kDeviceErrorNone, which = 0;
      int64_t v = 0;
      const int64_t at = s_start[k];
      auto ready = [&](int64_t a, int64_t* out) {
        if (!s_ready[a]) return false;
        *out = s_value[a];
        return true;
      };
      if (eval_program(s_code + at + 1, s_code[at], k, inputs, ready, &v, &kind, &which) ==
          kNotReady) {
        s_pending = 1;
        continue;
      }
      s_value[k] = v;
      s_kind[k] = kind;
      s_which[k] = which;
      s_new[k] = true;
    }
    __syncthreads();
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x)
      if (s_new[k]) {
        s_ready[k] = true;
        s_new[k] = false;
      }
    more = s_pending != 0;
  }
  __syncthreads();
  if (threadIdx.x == 0)
    for (int64_t k = 0; k < count; ++k)
      if (s_kind[k] != kDeviceErrorNone) {
        raise(error, s_kind[k], s_which[k]);
        break;
      }
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) slots[k] = s_value[k];
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
  void eval_scalars(const int64_t* code, int64_t code_len, int64_t count,
                    const DeviceScalarInput* inputs, int64_t* slots, int32_t* error,
                    void* s) const override {
    if (code_len <= kSharedCode && count <= kSharedScalars)
      launch_pdl(eval_scalars_kernel, 1, kEvalThreads, as_stream(s), code, code_len, count, inputs,
                 slots, error);
    else
      launch_pdl(eval_scalars_serial_kernel, 1, 1, as_stream(s), code, count, inputs, slots, error);
    IP_CUDA_CHECK(cudaGetLastError(), "runtime scalars");
  }
};

__global__ void publish_errors_kernel(const int32_t* flag, int32_t* host) {
  pdl_wait();  // every kernel of the call before it has finished, its writes visible
  if (threadIdx.x < 4) host[threadIdx.x] = flag[threadIdx.x];
}

}  // namespace

void publish_errors(const int32_t* device_flag, int32_t* host_flag, void* stream) {
  // Page-locked memory from cudaMallocHost has the same address on the device under unified
  // addressing, which every GPU the backend runs on (sm_90) has.
  launch_pdl(publish_errors_kernel, 1, 32, as_stream(stream), device_flag, host_flag);
  IP_CUDA_CHECK(cudaGetLastError(), "publishing the error flag");
}

const DeviceRuntime& device_runtime() {
  static const CudaRuntime runtime;
  return runtime;
}

}  // namespace inplace::cuda
