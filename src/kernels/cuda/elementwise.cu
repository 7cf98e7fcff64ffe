// Elementwise CUDA kernels: strided, broadcasting maps with the cpu kernels' conversions
// (kernels/cpu/elementwise.h), numbered by the neutral op codes (ops/elementwise_codes.h): inputs
// converted to the compute type, results stored in out's dtype. One kernel per compute type; the op
// is a uniform runtime switch (cheap to compile).
#include <algorithm>
#include <type_traits>

#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/elementwise_device.cuh"
#include "ops/elementwise_codes.h"

namespace inplace::cuda {

namespace {

template <typename T>
__global__ void copy_kernel(Operand out, Operand src, int64_t n) {
  pdl_begin();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store<T>(out, i, load<T>(src, i));
}

// Copies in one launch (cat's inputs into their slices of out): copy blockIdx.y as copy_kernel<T>
// computes it.
struct CopyBatch {
  Operand out[kMaxCopyBatch], src[kMaxCopyBatch];
  int64_t n[kMaxCopyBatch];
};
static_assert(sizeof(CopyBatch) < 32000, "a kernel's parameters hold at most 32764 bytes");

template <typename T>
__global__ void copy_batch_kernel(const __grid_constant__ CopyBatch batch) {
  pdl_begin();
  const int k = blockIdx.y;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < batch.n[k];
       i += int64_t(gridDim.x) * blockDim.x)
    store<T>(batch.out[k], i, load<T>(batch.src[k], i));
}

template <typename T>
__global__ void binary_kernel(int op, Operand out, Operand a, Operand b, T alpha, int64_t n) {
  pdl_begin();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store<T>(out, i, binary_op<T>(op, load<T>(a, i), load<T>(b, i), alpha));
}

struct BinaryBatch {
  BinaryTask task[kMaxBinaryBatch];
  int64_t n[kMaxBinaryBatch];  // elements of each task's result
};
static_assert(sizeof(BinaryBatch) < 32000, "a kernel's parameters hold at most 32764 bytes");

// Task blockIdx.y of the batch, as binary_kernel<T> computes it (the parameter is read where it
// lies: __grid_constant__ keeps a thread from copying the batch).
template <typename T>
__global__ void binary_batch_kernel(const __grid_constant__ BinaryBatch batch) {
  pdl_begin();
  const BinaryTask& t = batch.task[blockIdx.y];
  const T alpha =
      std::is_integral<T>::value ? static_cast<T>(t.alpha_i) : static_cast<T>(t.alpha_f);
  const int64_t n = batch.n[blockIdx.y];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store<T>(t.out, i, binary_op<T>(t.op, load<T>(t.a, i), load<T>(t.b, i), alpha));
}

template <typename T>
__global__ void unary_kernel(int op, Operand out, Operand in, int64_t n) {
  pdl_begin();
  const bool out_bool = out.dtype == DType::kBool;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store<T>(out, i, unary_op<T>(op, load<T>(in, i), out_bool));
}

template <typename T>
__global__ void compare_kernel(int op, Operand out, Operand a, Operand b, int64_t n) {
  pdl_begin();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store<int64_t>(out, i, compare_op<T>(op, load<T>(a, i), load<T>(b, i)) ? 1 : 0);
}

template <typename T>
__global__ void where_kernel(Operand out, Operand cond, Operand a, Operand b, int64_t n) {
  pdl_begin();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store<T>(out, i, load<int64_t>(cond, i) != 0 ? load<T>(a, i) : load<T>(b, i));
}

bool is_float_type(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 ||
         t == DType::kBFloat16;
}

void check_launch(const char* what) {
  IP_CUDA_CHECK(cudaGetLastError(), what);
}

}  // namespace

namespace {

// The type a copy converts through: int64 between integers, float from an integer to float32
// (one rounding, static_cast<float>, as the cpu and the operand loads of the other kernels
// convert it: through double, an int64 past 2^53 would round twice), else double.
enum class CopyVia { kInt64, kFloat, kDouble };
CopyVia copy_via(const Operand& out, const Operand& src) {
  if (!is_float_type(out.dtype) && (src.is_number || !is_float_type(src.dtype)) &&
      !(src.is_number && src.number_is_float))
    return CopyVia::kInt64;
  if (out.dtype == DType::kFloat32 && !src.is_number && !is_float_type(src.dtype))
    return CopyVia::kFloat;
  return CopyVia::kDouble;
}

}  // namespace

void copy_cast(const Operand& out, const Operand& src, void* stream) {
  const int64_t n = numel(out);
  if (n == 0) return;
  switch (copy_via(out, src)) {
    case CopyVia::kInt64:
      launch_pdl(copy_kernel<int64_t>, blocks_for(n), 256, as_stream(stream), out, src, n);
      break;
    case CopyVia::kFloat:
      launch_pdl(copy_kernel<float>, blocks_for(n), 256, as_stream(stream), out, src, n);
      break;
    case CopyVia::kDouble:
      launch_pdl(copy_kernel<double>, blocks_for(n), 256, as_stream(stream), out, src, n);
  }
  check_launch("copy");
}

void copy_cast_batch(const Operand* outs, const Operand* srcs, int n, void* stream) {
  CopyBatch batch;
  int count = 0;
  unsigned blocks = 1;
  bool one_via = true;
  for (int k = 0; k < n; ++k) {
    if (numel(outs[k]) == 0) continue;
    IP_ASSERT(count < kMaxCopyBatch, "a copy batch holds at most kMaxCopyBatch copies");
    batch.out[count] = outs[k];
    batch.src[count] = srcs[k];
    batch.n[count] = numel(outs[k]);
    blocks = std::max(blocks, blocks_for(batch.n[count]));
    one_via = one_via && copy_via(outs[k], srcs[k]) == copy_via(batch.out[0], batch.src[0]);
    ++count;
  }
  if (count == 0) return;
  if (count == 1 || !one_via) {  // each its own launch (converting through its own type)
    for (int k = 0; k < count; ++k) copy_cast(batch.out[k], batch.src[k], stream);
    return;
  }
  const dim3 grid(blocks, static_cast<unsigned>(count));
  const cudaStream_t s = as_stream(stream);
  switch (copy_via(batch.out[0], batch.src[0])) {
    case CopyVia::kInt64:
      launch_pdl(copy_batch_kernel<int64_t>, grid, 256, s, batch);
      break;
    case CopyVia::kFloat:
      launch_pdl(copy_batch_kernel<float>, grid, 256, s, batch);
      break;
    case CopyVia::kDouble:
      launch_pdl(copy_batch_kernel<double>, grid, 256, s, batch);
  }
  check_launch("copy batch");
}

void fill(const Operand& out, Scalar value, void* stream) {
  copy_cast(out, number(value), stream);
}

void binary(int op, const Operand& out, const Operand& a, const Operand& b, Scalar alpha,
            void* stream) {
  const int64_t n = numel(out);
  if (n == 0) return;
  const cudaStream_t s = as_stream(stream);
  switch (compute_kind(out.dtype)) {
    case 0:
      launch_pdl(binary_kernel<float>, blocks_for(n), 256, s, op, out, a, b,
                 static_cast<float>(alpha.to_double()), n);
      break;
    case 1:
      launch_pdl(binary_kernel<double>, blocks_for(n), 256, s, op, out, a, b, alpha.to_double(), n);
      break;
    default:
      launch_pdl(binary_kernel<int64_t>, blocks_for(n), 256, s, op, out, a, b, alpha.to_int(), n);
  }
  check_launch("binary");
}

void binary_batch(const BinaryTask* tasks, int n, void* stream) {
  IP_ASSERT(n > 0 && n <= kMaxBinaryBatch, "a binary batch holds 1 to kMaxBinaryBatch tasks");
  BinaryBatch batch;
  unsigned blocks = 1;
  for (int k = 0; k < n; ++k) {
    IP_ASSERT(tasks[k].out.dtype == tasks[0].out.dtype, "a binary batch has one result dtype");
    batch.task[k] = tasks[k];
    batch.n[k] = numel(tasks[k].out);
    blocks = std::max(blocks, blocks_for(batch.n[k]));
  }
  const dim3 grid(blocks, static_cast<unsigned>(n));
  const cudaStream_t s = as_stream(stream);
  switch (compute_kind(tasks[0].out.dtype)) {
    case 0:
      launch_pdl(binary_batch_kernel<float>, grid, 256, s, batch);
      break;
    case 1:
      launch_pdl(binary_batch_kernel<double>, grid, 256, s, batch);
      break;
    default:
      launch_pdl(binary_batch_kernel<int64_t>, grid, 256, s, batch);
  }
  check_launch("binary batch");
}

void unary(int op, const Operand& out, const Operand& in, void* stream) {
  const int64_t n = numel(out);
  if (n == 0) return;
  const cudaStream_t s = as_stream(stream);
  // logical_not tests the input itself, whatever out's dtype.
  const DType compute =
      op == 25 ? (is_float_type(in.dtype) ? DType::kFloat64 : DType::kInt64) : out.dtype;
  switch (compute_kind(compute)) {
    case 0:
      launch_pdl(unary_kernel<float>, blocks_for(n), 256, s, op, out, in, n);
      break;
    case 1:
      launch_pdl(unary_kernel<double>, blocks_for(n), 256, s, op, out, in, n);
      break;
    default:
      launch_pdl(unary_kernel<int64_t>, blocks_for(n), 256, s, op, out, in, n);
  }
  check_launch("unary");
}

void compare(int op, const Operand& out, const Operand& a, const Operand& b, DType compute,
             void* stream) {
  const int64_t n = numel(out);
  if (n == 0) return;
  const cudaStream_t s = as_stream(stream);
  // Logical ops test each side for != 0 in its own type: double holds every value exactly
  // enough for that.
  if (op >= 6) compute = DType::kFloat64;
  switch (compute_kind(compute)) {
    case 0:
      launch_pdl(compare_kernel<float>, blocks_for(n), 256, s, op, out, a, b, n);
      break;
    case 1:
      launch_pdl(compare_kernel<double>, blocks_for(n), 256, s, op, out, a, b, n);
      break;
    default:
      launch_pdl(compare_kernel<int64_t>, blocks_for(n), 256, s, op, out, a, b, n);
  }
  check_launch("compare");
}

void where(const Operand& out, const Operand& cond, const Operand& a, const Operand& b,
           void* stream) {
  const int64_t n = numel(out);
  if (n == 0) return;
  const cudaStream_t s = as_stream(stream);
  switch (compute_kind(out.dtype)) {
    case 0:
      launch_pdl(where_kernel<float>, blocks_for(n), 256, s, out, cond, a, b, n);
      break;
    case 1:
      launch_pdl(where_kernel<double>, blocks_for(n), 256, s, out, cond, a, b, n);
      break;
    default:
      launch_pdl(where_kernel<int64_t>, blocks_for(n), 256, s, out, cond, a, b, n);
  }
  check_launch("where");
}

}  // namespace inplace::cuda
