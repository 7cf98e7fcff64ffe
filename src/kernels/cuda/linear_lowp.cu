// The decode GEMV with a bfloat16 weight: one warp per output column, 16-byte loads of the
// weight row (eight bf16 at a time), up to kRows input rows per pass of the row, float32
// accumulation, a warp reduction. Memory-bound at one token: the weight is read once.
#include "kernels/cuda/device_common.cuh"

namespace inplace::cuda {

namespace {

constexpr int kRows = 4;
constexpr int kWarpsPerBlock = 8;

template <bool kVector>
__global__ void gemv_bf16_kernel(const float* __restrict__ x, int64_t x_stride, int64_t rows,
                                 const __nv_bfloat16* __restrict__ w, int64_t K, int64_t N,
                                 const float* __restrict__ bias, float* __restrict__ y,
                                 int64_t y_stride) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
  if (n >= N) return;
  const __nv_bfloat16* wr = w + n * K;
  for (int64_t m0 = 0; m0 < rows; m0 += kRows) {
    float acc[kRows] = {};
    if (kVector) {
      for (int64_t k = lane * 8; k < K; k += 256) {
        const uint4 raw = __ldg(reinterpret_cast<const uint4*>(wr + k));
        const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
        float wf[8];
        for (int t = 0; t < 4; ++t) {
          const float2 f = __bfloat1622float2(h[t]);
          wf[2 * t] = f.x;
          wf[2 * t + 1] = f.y;
        }
        for (int r = 0; r < kRows; ++r) {
          if (m0 + r >= rows) break;
          const float4* xr = reinterpret_cast<const float4*>(x + (m0 + r) * x_stride + k);
          const float4 a = xr[0], b = xr[1];
          acc[r] += a.x * wf[0] + a.y * wf[1] + a.z * wf[2] + a.w * wf[3] + b.x * wf[4] +
                    b.y * wf[5] + b.z * wf[6] + b.w * wf[7];
        }
      }
    } else {
      for (int64_t k = lane; k < K; k += 32) {
        const float wv = __bfloat162float(wr[k]);
        for (int r = 0; r < kRows; ++r)
          if (m0 + r < rows) acc[r] += x[(m0 + r) * x_stride + k] * wv;
      }
    }
    for (int r = 0; r < kRows; ++r) {
      float v = acc[r];
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == 0 && m0 + r < rows) y[(m0 + r) * y_stride + n] = v + (bias ? bias[n] : 0.f);
    }
  }
}

}  // namespace

void gemv_bf16(const float* x, int64_t x_stride, int64_t rows, const void* w, int64_t k, int64_t n,
               const float* bias, float* y, int64_t y_stride, void* stream) {
  if (rows == 0 || n == 0) return;
  const bool vector = k % 8 == 0 && x_stride % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(w) % 16 == 0;
  const unsigned blocks = static_cast<unsigned>((n + kWarpsPerBlock - 1) / kWarpsPerBlock);
  const auto* wb = static_cast<const __nv_bfloat16*>(w);
  if (vector)
    gemv_bf16_kernel<true><<<blocks, 32 * kWarpsPerBlock, 0, as_stream(stream)>>>(
        x, x_stride, rows, wb, k, n, bias, y, y_stride);
  else
    gemv_bf16_kernel<false><<<blocks, 32 * kWarpsPerBlock, 0, as_stream(stream)>>>(
        x, x_stride, rows, wb, k, n, bias, y, y_stride);
  IP_CUDA_CHECK(cudaGetLastError(), "linear_bf16_weight");
}

}  // namespace inplace::cuda
