// Device-side helpers shared by the .cu files: error checks, element offsets of strided
// operands, and loads/stores that convert between a tensor's dtype and a compute type.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <type_traits>

#include "core/error.h"
#include "kernels/cuda/launch.h"

#define IP_CUDA_CHECK(expr, what)                                      \
  do {                                                                 \
    cudaError_t ip_err_ = (expr);                                      \
    IP_CHECK(ip_err_ == cudaSuccess, kInternal, "[cuda] ", what, ": ", \
             cudaGetErrorString(ip_err_));                             \
  } while (0)

namespace inplace::cuda {

// Programmatic dependent launch (sm_90 and later). Every kernel is launched with the PDL
// attribute (launch_pdl) and begins with pdl_trigger(): the next kernel in the stream may then be
// scheduled while this one runs, so its launch and ramp overlap this kernel's tail instead of
// following it. Every kernel then calls pdl_wait() before it reads anything an earlier kernel
// wrote or writes anything; the wait returns when the earlier kernels have finished and their
// writes are visible (and at once when the kernel was not launched as a dependent). Most kernels
// do both first (pdl_begin); the GEMVs fetch their constant weights in between. No kernel may
// exit without waiting: the next kernel's wait covers only its direct predecessor, which must
// itself have waited for everything before it.
__device__ inline void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}
__device__ inline void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ inline void pdl_begin() {
  pdl_trigger();
  pdl_wait();
}

// Asks L1 (and L2) to fetch the line holding p: a hint that changes no value, so it may be given
// before pdl_wait() for constants the kernel will read after a barrier.
__device__ inline void prefetch_l1(const void* p) {
  asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
}

// Asks L2 to fetch [p, p + bytes) (p and bytes multiples of 16), in the background: a hint that
// changes no value, so it may be given before pdl_wait() for memory the kernel will read later.
__device__ inline void prefetch_l2(const void* p, uint64_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // The bulk prefetch takes a 16-byte aligned address and a multiple of 16 bytes: the range is
  // narrowed to the aligned part inside it (a hint never reaches past what it was given).
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + 15) & ~uintptr_t(15);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~uintptr_t(15);
  if (end <= begin) return;
  const char* c = reinterpret_cast<const char*>(begin);
  bytes = end - begin;
  while (bytes > 0) {
    const uint32_t part = bytes > (1u << 20) ? (1u << 20) : static_cast<uint32_t>(bytes);
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(c), "r"(part) : "memory");
    c += part;
    bytes -= part;
  }
#endif
}

inline cudaStream_t as_stream(void* s) {
  return static_cast<cudaStream_t>(s);
}

// Launches kernel(args...) on s as a programmatic dependent of the stream's previous kernel, in
// thread-block clusters of `cluster` blocks when given (past 8 blocks the kernel must have
// cudaFuncAttributeNonPortableClusterSizeAllowed set: sm_90 runs clusters of 16).
template <typename... Params, typename... Args>
void launch_pdl_in(void (*kernel)(Params...), dim3 grid, dim3 block, const dim3* cluster,
                   cudaStream_t s, Args... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.stream = s;
  cudaLaunchAttribute attribute[2];
  config.numAttrs = 0;
  static const bool pdl = pdl_enabled();
  if (pdl) {
    attribute[config.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[config.numAttrs++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster) {
    attribute[config.numAttrs].id = cudaLaunchAttributeClusterDimension;
    attribute[config.numAttrs].val.clusterDim.x = cluster->x;
    attribute[config.numAttrs].val.clusterDim.y = cluster->y;
    attribute[config.numAttrs++].val.clusterDim.z = cluster->z;
  }
  config.attrs = attribute;
  IP_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...), "a kernel launch");
}

template <typename... Params, typename... Args>
void launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t s, Args... args) {
  launch_pdl_in(kernel, grid, block, nullptr, s, args...);
}

template <typename... Params, typename... Args>
void launch_pdl_cluster(void (*kernel)(Params...), dim3 grid, dim3 block, dim3 cluster,
                        cudaStream_t s, Args... args) {
  launch_pdl_in(kernel, grid, block, &cluster, s, args...);
}

// Launch geometry for n elements, grid-stride loops.
inline unsigned blocks_for(int64_t n, int threads = 256) {
  int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

// a / b and a % b for 0 <= a < 2^32, 0 < b < 2^32, in 32-bit arithmetic: a 64-bit division is
// a subroutine of some seventy instructions, on the path to a kernel's first load.
__device__ inline int64_t div32(int64_t a, int64_t b) {
  return static_cast<uint32_t>(a) / static_cast<uint32_t>(b);
}
__device__ inline int64_t mod32(int64_t a, int64_t b) {
  return static_cast<uint32_t>(a) % static_cast<uint32_t>(b);
}

// a / b and a % b for a >= 0, b > 0: in 32-bit arithmetic where both fit.
__device__ inline bool fits32(int64_t a, int64_t b) {
  return ((static_cast<uint64_t>(a) | static_cast<uint64_t>(b)) >> 32) == 0;
}
__device__ inline int64_t div_nonneg(int64_t a, int64_t b) {
  return fits32(a, b) ? div32(a, b) : a / b;
}
__device__ inline int64_t mod_nonneg(int64_t a, int64_t b) {
  return fits32(a, b) ? mod32(a, b) : a % b;
}

// The element offset of linear index `linear` in o, dim by dim; in 32-bit arithmetic where the
// index and the dim fit (every tensor below 2^32 elements).
__device__ inline int64_t offset_of(const Operand& o, int64_t linear) {
  int64_t off = 0;
  for (int d = o.ndim - 1; d >= 0; --d) {
    const int64_t s = o.size[d];
    off += mod_nonneg(linear, s) * o.stride[d];
    linear = div_nonneg(linear, s);
  }
  return off;
}

// f.template operator()<T>() with T the storage type of a float32, bfloat16 or float16 dtype
// (float, __nv_bfloat16, __half); false, calling nothing, for any other dtype.
template <typename F>
bool visit_float_storage(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32:
      f.template operator()<float>();
      return true;
    case DType::kBFloat16:
      f.template operator()<__nv_bfloat16>();
      return true;
    case DType::kFloat16:
      f.template operator()<__half>();
      return true;
    default:
      return false;
  }
}

// A float32, bfloat16 or float16 value as float, and a float rounded to one (to nearest even).
template <typename T>
__device__ inline float to_f(T v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __bfloat162float(v);
  else
    return __half2float(v);
}

template <typename T>
__device__ inline T from_f(float v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(v);
  else
    return __float2half_rn(v);
}

template <typename T>
__device__ inline T load_at(const char* p, DType t, int64_t e) {
  switch (t) {
    case DType::kFloat32:
      return static_cast<T>(reinterpret_cast<const float*>(p)[e]);
    case DType::kFloat64:
      return static_cast<T>(reinterpret_cast<const double*>(p)[e]);
    case DType::kFloat16:
      return static_cast<T>(__half2float(reinterpret_cast<const __half*>(p)[e]));
    case DType::kBFloat16:
      return static_cast<T>(__bfloat162float(reinterpret_cast<const __nv_bfloat16*>(p)[e]));
    case DType::kInt64:
      return static_cast<T>(reinterpret_cast<const int64_t*>(p)[e]);
    case DType::kInt32:
      return static_cast<T>(reinterpret_cast<const int32_t*>(p)[e]);
    case DType::kInt16:
      return static_cast<T>(reinterpret_cast<const int16_t*>(p)[e]);
    case DType::kInt8:
      return static_cast<T>(reinterpret_cast<const int8_t*>(p)[e]);
    case DType::kUInt8:
      return static_cast<T>(reinterpret_cast<const uint8_t*>(p)[e]);
    case DType::kBool:
      return static_cast<T>(reinterpret_cast<const bool*>(p)[e] ? 1 : 0);
  }
  return T(0);
}

// The element of `o` at linear index `i` of the broadcast shape, as T.
template <typename T>
__device__ inline T load(const Operand& o, int64_t i) {
  if (o.is_number) return o.number_is_float ? static_cast<T>(o.f) : static_cast<T>(o.i);
  return load_at<T>(o.data, o.dtype, offset_of(o, i));
}

template <typename T>
__device__ inline void store_at(char* p, DType t, int64_t e, T v) {
  switch (t) {
    case DType::kFloat32:
      reinterpret_cast<float*>(p)[e] = static_cast<float>(v);
      break;
    case DType::kFloat64:
      reinterpret_cast<double*>(p)[e] = static_cast<double>(v);
      break;
    case DType::kFloat16:
      reinterpret_cast<__half*>(p)[e] = __float2half_rn(static_cast<float>(v));
      break;
    case DType::kBFloat16:
      reinterpret_cast<__nv_bfloat16*>(p)[e] = __float2bfloat16_rn(static_cast<float>(v));
      break;
    case DType::kInt64:
      reinterpret_cast<int64_t*>(p)[e] = static_cast<int64_t>(v);
      break;
    case DType::kInt32:
      reinterpret_cast<int32_t*>(p)[e] = static_cast<int32_t>(v);
      break;
    case DType::kInt16:
      reinterpret_cast<int16_t*>(p)[e] = static_cast<int16_t>(v);
      break;
    case DType::kInt8:
      reinterpret_cast<int8_t*>(p)[e] = static_cast<int8_t>(v);
      break;
    case DType::kUInt8:
      reinterpret_cast<uint8_t*>(p)[e] = static_cast<uint8_t>(v);
      break;
    case DType::kBool:
      reinterpret_cast<bool*>(p)[e] = v != T(0);
      break;
  }
}

template <typename T>
__device__ inline void store(const Operand& o, int64_t i, T v) {
  store_at<T>(o.data, o.dtype, offset_of(o, i), v);
}

// Row n of a GEMV's weights of k elements, `w`'s or a further weight's (GemvMoreWeights): every
// column of a grouped product picks its weight from the row range it falls in.
template <typename T>
__device__ inline const T* weight_row(const void* w, const GemvMoreWeights& more, int64_t n,
                                      int64_t k) {
  int64_t first = 0;
#pragma unroll
  for (int i = 0; i < kGemvMaxMoreWeights; ++i)
    if (i < more.count && n >= more.first[i]) {
      w = more.w[i];
      first = more.first[i];
    }
  return static_cast<const T*>(w) + (n - first) * k;
}

// Column n's bias, picked as weight_row picks its weight: a further weight's own (more.bias) or
// element n of `bias` (null: none).
template <typename T>
__device__ inline const T* bias_at(const void* bias, const GemvMoreWeights& more, int64_t n) {
  int64_t first = 0;
#pragma unroll
  for (int i = 0; i < kGemvMaxMoreWeights; ++i)
    if (i < more.count && n >= more.first[i] && more.bias[i]) {
      bias = more.bias[i];
      first = more.first[i];
    }
  return bias ? static_cast<const T*>(bias) + (n - first) : nullptr;
}

// The compute type of a dtype: 0 float, 1 double, 2 int64.
inline int compute_kind(DType t) {
  if (t == DType::kFloat64) return 1;
  if (t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16) return 0;
  return 2;
}

}  // namespace inplace::cuda
