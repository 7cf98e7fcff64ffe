// upcast_rms_norm on the device: Hugging Face's RMSNorm at a half dtype (ops/nn_ops.cpp) where it
// does not fold into the product after it (a decoder's per-head q and k norms, Qwen3's and
// Gemma 3's; a norm whose result is not a product's input). One warp a row: each lane takes the
// row's elements lane, lane + 32, ..., squares them in float and sums the squares in double; the
// lanes' sums meet by a butterfly in double (a fixed order, so every call gives the same bits);
// the mean is the double sum over d rounded to float, + eps in float, 1 / sqrt in float (IEEE
// division and square root: no fast-math flag), then h = x * inv in float and the weight applied
// as the chain does: weight * h.to(dt) in float rounded to dt, or (h * weight).to(dt) with a
// float32 weight (weight_in_float; or w.to(float32) + weight_offset, Gemma's 1 + w, from the
// model's own weight, the add in float as the chain's). The sum of float squares in double is
// exact unless the row's squares span more than 29 binary orders of magnitude, so its order shows
// in no result the cpu kernel's order (four chains) would not give; the tests compare the two bit
// for bit. rms_norm_rotary is the same row with rotary_embedding after it in the same warp: the
// normalised row (rounded to dt) is kept in shared memory, and each element becomes
// x * cos + rotate_half(x) * sin with rotary.cu's rounding points (each product and the sum
// rounded to dt). A decoder layer's q and k steps run as one launch (a pair:
// kernels/cuda/launch_groups.h), or are one step (heads from `split` on take weight2) whose k rows
// are also stored into the cache from the epilogue (the kv_cache_update after it, as a GEMV's row
// writes: gemv_device.cuh).
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/gemv_device.cuh"

namespace inplace::cuda {

namespace {

constexpr int kRowWarps = 8;
// The longest row rms_norm_rotary keeps in shared memory (a head: 64 to 256 in the models).
constexpr int64_t kMaxRotaryD = 1024;
constexpr int kMaxNormWrites = 2;

// One step's rows, compact (a kernel parameter holds two): the leading dims of x, y, cos and sin
// (offsets of a row), the stride of each along the row.
struct NormRows {
  Operand x, y, cos, sin, r;  // r: the residual's rows, where r.data is set
  int64_t xs = 0, ys = 0, cs = 0, ss = 0, ws = 0, rs = 0;
  const char* w = nullptr;
  const char* w2 = nullptr;  // heads (row % heads) from `split` on, where set
  int64_t split = 0, heads = 1;
  float eps = 0;
  float w_offset = 0;   // weight_in_float: w.to(float32) + w_offset
  bool w_half = false;  // weight_in_float with a weight of the input's dtype (weight_offset)
  int64_t rows = 0, d = 0;
};
// One or two steps; the first step's result (contiguous rows of d) may also be stored by row
// writes (column r * d + c of the result is element c of row r).
struct NormLaunch {
  NormRows step[2];
  int n = 0;
  GemvRowWrite writes[kMaxNormWrites];
  int n_writes = 0;
};

int64_t col_stride(const Operand& cols) {
  return cols.ndim ? cols.stride[0] : 0;
}

NormRows rows_of(const NormRotaryStep& s, bool rotary) {
  NormRows r;
  r.x = s.task.in.rows;
  r.y = s.task.out.rows;
  r.xs = col_stride(s.task.in.cols);
  r.ys = col_stride(s.task.out.cols);
  r.w = s.task.weight.data;
  r.ws = col_stride(s.task.weight);
  r.w2 = s.weight2.data;
  r.split = s.split;
  r.heads = s.heads;
  r.eps = static_cast<float>(s.task.eps);
  r.w_offset = s.weight_offset;
  r.r = s.residual.rows;
  r.rs = col_stride(s.residual.cols);
  r.w_half = s.weight_in_float && s.task.weight.dtype != DType::kFloat32;
  r.rows = numel(s.task.in.rows);
  r.d = numel(s.task.in.cols);
  if (rotary) {
    r.cos = s.cos.rows;
    r.sin = s.sin.rows;
    r.cs = col_stride(s.cos.cols);
    r.ss = col_stride(s.sin.cols);
  }
  return r;
}

// v rounded to T (to nearest even), back in float.
template <typename T>
__device__ inline float rounded(float v) {
  return to_f(from_f<T>(v));
}

// Element c of a row, normalised (h = x * inv in float), weighted as the chain does.
template <typename T, bool kWeightFloat>
__device__ inline T weighted(const NormRows& s, const char* wrow, int64_t c, float h) {
  if constexpr (kWeightFloat) {
    float w = s.w_half ? to_f(reinterpret_cast<const T*>(wrow)[c * s.ws])
                       : reinterpret_cast<const float*>(wrow)[c * s.ws];
    if (s.w_offset != 0.f) w = __fadd_rn(w, s.w_offset);  // the chain's add, in float
    return from_f<T>(__fmul_rn(h, w));
  } else {
    const float w = to_f(reinterpret_cast<const T*>(wrow)[c * s.ws]);
    return from_f<T>(w * to_f(from_f<T>(h)));
  }
}

// residual + the norm, as add at T: the float sum rounded once.
template <typename T>
__device__ inline T plus_residual(const T* rrow, int64_t c, int64_t rs, T v) {
  return rrow ? from_f<T>(__fadd_rn(to_f(rrow[c * rs]), to_f(v))) : v;
}

template <typename T>
__device__ inline const T* residual_row(const NormRows& s, int64_t r) {
  return s.r.data ? reinterpret_cast<const T*>(s.r.data) + offset_of(s.r, r) : nullptr;
}

// A few long rows (a decode step's hidden row, one row of 1024 to 4096): a block a row, its 8
// warps a strided share of the row each; the warps' double sums meet in shared memory in warp
// order (a fixed order: every call the same bits; the sum of float squares in double is exact
// unless the squares span more than 29 binary orders of magnitude, as for the warp form).
template <typename T, bool kWeightFloat>
__global__ void __launch_bounds__(32 * kRowWarps) upcast_rms_norm_block_kernel(NormLaunch l) {
  pdl_begin();
  const NormRows& s = l.step[0];
  const int64_t r = blockIdx.x, d = s.d;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const T* x = reinterpret_cast<const T*>(s.x.data) + offset_of(s.x, r);
  T* y = reinterpret_cast<T*>(s.y.data) + offset_of(s.y, r);
  const T* rrow = residual_row<T>(s, r);
  double sq = 0;
  for (int64_t c = threadIdx.x; c < d; c += 32 * kRowWarps) {
    const float u = to_f(x[c * s.xs]);
    sq += static_cast<double>(u * u);
  }
  for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
  __shared__ double part[kRowWarps];
  if (lane == 0) part[warp] = sq;
  __syncthreads();
  double total = 0;
  for (int w = 0; w < kRowWarps; ++w) total += part[w];
  const float var = static_cast<float>(total / static_cast<double>(d));
  const float inv = 1.0f / sqrtf(var + s.eps);
  for (int64_t c = threadIdx.x; c < d; c += 32 * kRowWarps)
    y[c * s.ys] =
        plus_residual(rrow, c, s.rs, weighted<T, kWeightFloat>(s, s.w, c, to_f(x[c * s.xs]) * inv));
}

template <typename T, bool kWeightFloat, bool kRotary>
__global__ void __launch_bounds__(32 * kRowWarps) upcast_rms_norm_kernel(NormLaunch l) {
  pdl_begin();
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t total = l.step[0].rows + (l.n > 1 ? l.step[1].rows : 0);
  const int64_t stride = int64_t{gridDim.x} * kRowWarps;
  __shared__ float normed[kRotary ? kRowWarps : 1][kRotary ? kMaxRotaryD : 1];
  // The row writes' places (one position for every head, as a decode step's cache position),
  // read once a warp; refused positions flagged by one warp.
  gemv::RowPlaces place;
  if (l.n_writes > 0)
    place = gemv::row_places<32>(l.writes, l.n_writes, blockIdx.x == 0 && warp == 0);
  for (int64_t g = int64_t{blockIdx.x} * kRowWarps + warp; g < total; g += stride) {
    const bool second = g >= l.step[0].rows;
    const NormRows& s = l.step[second ? 1 : 0];
    const int64_t r = second ? g - l.step[0].rows : g, d = s.d;
    const T* x = reinterpret_cast<const T*>(s.x.data) + offset_of(s.x, r);
    T* y = reinterpret_cast<T*>(s.y.data) + offset_of(s.y, r);
    const char* wrow = s.w2 && mod_nonneg(r, s.heads) >= s.split ? s.w2 : s.w;
    double sq = 0;
    for (int64_t c = lane; c < d; c += 32) {
      const float u = to_f(x[c * s.xs]);
      sq += static_cast<double>(u * u);  // pow(x, 2) in float32, summed in double by mean
    }
    for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
    const float var = static_cast<float>(sq / static_cast<double>(d));
    const float inv = 1.0f / sqrtf(var + s.eps);  // rsqrt as the cpu's kernel: 1 / sqrt
    const T* rrow = kRotary ? nullptr : residual_row<T>(s, r);
    for (int64_t c = lane; c < d; c += 32) {
      const T v = weighted<T, kWeightFloat>(s, wrow, c, to_f(x[c * s.xs]) * inv);
      if constexpr (kRotary)
        normed[warp][c] = to_f(v);
      else
        y[c * s.ys] = plus_residual(rrow, c, s.rs, v);
    }
    if constexpr (kRotary) {
      __syncwarp();
      const T* cr = reinterpret_cast<const T*>(s.cos.data) + offset_of(s.cos, r);
      const T* sr = reinterpret_cast<const T*>(s.sin.data) + offset_of(s.sin, r);
      const int64_t half = d / 2;
      for (int64_t c = lane; c < d; c += 32) {
        const float other = normed[warp][c < half ? c + half : c - half];
        const float a = rounded<T>(__fmul_rn(normed[warp][c], to_f(cr[c * s.cs])));
        const float b = rounded<T>(__fmul_rn(c < half ? -other : other, to_f(sr[c * s.ss])));
        const T v = from_f<T>(__fadd_rn(a, b));
        y[c * s.ys] = v;
        if (l.n_writes > 0 && !second) {
          if (T* t = gemv::row_target<T>(l.writes[0], r * d + c, place.first)) *t = v;
          if (l.n_writes > 1)
            if (T* t = gemv::row_target<T>(l.writes[1], r * d + c, place.second)) *t = v;
        }
      }
      __syncwarp();  // the row's slots are rewritten by the next row
    }
  }
}

// Rows at most this many, each at least kBlockRowD long, take a block a row (the warp form
// leaves most of the GPU idle and walks a row of 1024 in 32 dependent rounds).
constexpr int64_t kBlockRows = 64, kBlockRowD = 512;

template <typename T, bool kRotary>
void launch(const NormLaunch& l, bool weight_in_float, cudaStream_t s) {
  const int64_t total = l.step[0].rows + (l.n > 1 ? l.step[1].rows : 0);
  if (!kRotary && l.n == 1 && l.n_writes == 0 && total <= kBlockRows && l.step[0].d >= kBlockRowD) {
    const unsigned rows = static_cast<unsigned>(total);
    if (weight_in_float)
      launch_pdl(upcast_rms_norm_block_kernel<T, true>, rows, 32 * kRowWarps, s, l);
    else
      launch_pdl(upcast_rms_norm_block_kernel<T, false>, rows, 32 * kRowWarps, s, l);
    return;
  }
  const int64_t blocks = (total + kRowWarps - 1) / kRowWarps;
  const unsigned grid = static_cast<unsigned>(blocks < 65535 * 4 ? blocks : 65535 * 4);
  if (weight_in_float)
    launch_pdl(upcast_rms_norm_kernel<T, true, kRotary>, grid, 32 * kRowWarps, s, l);
  else
    launch_pdl(upcast_rms_norm_kernel<T, false, kRotary>, grid, 32 * kRowWarps, s, l);
}

// Steps of one dtype and weight form in one launch (n = 1 or 2).
template <bool kRotary>
void run(const NormRotaryStep* steps, int n, const GemvRowWrite* writes, int n_writes,
         void* stream) {
  NormLaunch l;
  for (int i = 0; i < n_writes; ++i) l.writes[l.n_writes++] = writes[i];
  for (int i = 0; i < n; ++i) {
    if (numel(steps[i].task.in.rows) == 0 || numel(steps[i].task.in.cols) == 0) continue;
    l.step[l.n++] = rows_of(steps[i], kRotary);
  }
  if (l.n == 0) return;
  const cudaStream_t s = as_stream(stream);
  const DType t = steps[0].task.in.rows.dtype;
  const bool in_float = steps[0].weight_in_float;
  if (t == DType::kBFloat16)
    launch<__nv_bfloat16, kRotary>(l, in_float, s);
  else if (t == DType::kFloat16)
    launch<__half, kRotary>(l, in_float, s);
  else
    launch<float, kRotary>(l, in_float, s);
  IP_CUDA_CHECK(cudaGetLastError(), kRotary ? "rms_norm_rotary" : "upcast_rms_norm");
}

}  // namespace

void upcast_rms_norm(const NormRotaryStep& s, void* stream) {
  run<false>(&s, 1, nullptr, 0, stream);
}

void rms_norm_rotary(const NormRotaryStep* steps, int n, void* stream) {
  IP_ASSERT(n >= 1 && n <= 2, "rms_norm_rotary launches one or two steps");
  for (int i = 0; i < n; ++i)
    IP_CHECK(numel(steps[i].task.in.cols) <= kMaxRotaryD, kUnsupported,
             "[cuda] rms_norm_rotary takes rows of at most ", kMaxRotaryD, " elements, got ",
             numel(steps[i].task.in.cols));
  const bool one_form = n == 1 || (steps[1].task.in.rows.dtype == steps[0].task.in.rows.dtype &&
                                   steps[1].weight_in_float == steps[0].weight_in_float);
  // (each step's rows carry their own weight dtype and offset)
  if (!one_form) {
    run<true>(steps, 1, nullptr, 0, stream);
    run<true>(steps + 1, 1, nullptr, 0, stream);
    return;
  }
  run<true>(steps, n, nullptr, 0, stream);
}

void rms_norm_rotary_writes(const NormRotaryStep& step, const GemvRowWrite* writes, int n_writes,
                            void* stream) {
  IP_ASSERT(n_writes >= 1 && n_writes <= kMaxNormWrites, "rms_norm_rotary takes two row writes");
  IP_CHECK(numel(step.task.in.cols) <= kMaxRotaryD, kUnsupported,
           "[cuda] rms_norm_rotary takes rows of at most ", kMaxRotaryD, " elements, got ",
           numel(step.task.in.cols));
  run<true>(&step, 1, writes, n_writes, stream);
}

}  // namespace inplace::cuda
