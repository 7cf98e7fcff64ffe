// sample_row (sample_row.h). Thread `j` of a block owns a run of consecutive elements of the
// block's chunk, so the row's index order is (block, thread, element): the draw's place is found
// by the block whose prefix of the total holds it, then by the thread whose run does, which
// walks its run. Weights are integers, so every sum is the host's whatever the order of adding.
#include <cooperative_groups.h>

#include <algorithm>

#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/sample_row.h"
#include "ops/sampling_weight.h"

namespace inplace::cuda {

namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxCluster = 8;       // portable
constexpr int64_t kMinChunk = 4096;  // elements a block at least, unless the row is shorter
constexpr long long kNone = 0x7FFFFFFFFFFFFFFFll;

struct Shared {
  float warp_max[kWarps];
  long long warp_nan[kWarps];
  unsigned long long warp_sum[kWarps];
  float top;               // this block's largest logit (NaN left out), then the row's
  long long nan;           // this block's first NaN, then the row's (kNone: none)
  unsigned long long sum;  // this block's total weight
};

template <typename T>
__device__ inline double logit(const T* x, int64_t stride, int64_t i) {
  return static_cast<double>(to_f(x[i * stride]));
}

template <typename T>
__global__ void __launch_bounds__(kThreads) sample_row_kernel(SampleRow s, int64_t chunk) {
  cg::cluster_group cluster = cg::this_cluster();
  const int blocks = static_cast<int>(cluster.dim_blocks().x);
  const int rank = static_cast<int>(cluster.block_rank());
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  __shared__ Shared sh;
  pdl_begin();
  const T* x = static_cast<const T*>(s.logits);
  const int64_t c0 = rank * chunk, c1 = std::min(s.n, c0 + chunk);
  const int64_t run = (chunk + kThreads - 1) / kThreads;
  const int64_t a = std::min(c1, c0 + t * run), b = std::min(c1, a + run);

  // The largest logit and the first NaN.
  float top = -INFINITY;
  long long nan = kNone;
  for (int64_t i = a; i < b; ++i) {
    const float v = to_f(x[i * s.stride]);
    if (v != v) {
      nan = i;
      break;
    }
    top = fmaxf(top, v);
  }
  for (int o = 16; o > 0; o >>= 1) {
    top = fmaxf(top, __shfl_xor_sync(0xFFFFFFFFu, top, o));
    nan = min(nan, __shfl_xor_sync(0xFFFFFFFFu, nan, o));
  }
  if (lane == 0) {
    sh.warp_max[warp] = top;
    sh.warp_nan[warp] = nan;
  }
  __syncthreads();
  if (t == 0) {
    for (int w = 1; w < kWarps; ++w) {
      top = fmaxf(top, sh.warp_max[w]);
      nan = min(nan, sh.warp_nan[w]);
    }
    sh.top = top;
    sh.nan = nan;
  }
  cluster.sync();  // every block's top and NaN are in its shared memory
  top = -INFINITY;
  nan = kNone;
  for (int r = 0; r < blocks; ++r) {
    const Shared* other = cluster.map_shared_rank(&sh, r);
    top = fmaxf(top, other->top);
    nan = min(nan, other->nan);
  }
  cluster.sync();  // read by all: each block's shared memory may be written again
  if (nan != kNone) {
    if (rank == 0 && t == 0) {
      s.out[0] = -1;
      s.out[1] = 0;
      s.out[2] = nan;
    }
    return;
  }

  // Each thread's weight over its run, the block's, the row's and the blocks' before this one.
  const double top_d = static_cast<double>(top);
  unsigned long long mine = 0;
  for (int64_t i = a; i < b; ++i)
    mine += static_cast<unsigned long long>(
        sampling::weight(logit(x, s.stride, i), top_d, s.temperature));
  unsigned long long inclusive = mine;  // over the warp's threads up to this one
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned long long v = __shfl_up_sync(0xFFFFFFFFu, inclusive, o);
    if (lane >= o) inclusive += v;
  }
  if (lane == 31) sh.warp_sum[warp] = inclusive;
  __syncthreads();
  unsigned long long before_warp = 0, block_sum = 0;
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp) before_warp += sh.warp_sum[w];
    block_sum += sh.warp_sum[w];
  }
  if (t == 0) sh.sum = block_sum;
  cluster.sync();
  unsigned long long total = 0, before_block = 0;
  for (int r = 0; r < blocks; ++r) {
    const unsigned long long v = cluster.map_shared_rank(&sh, r)->sum;
    if (r < rank) before_block += v;
    total += v;
  }
  cluster.sync();
  const unsigned long long place = sampling::scaled_draw(s.draw, total);
  const unsigned long long start = before_block + before_warp + inclusive - mine;
  if (place < start || place >= start + mine) return;  // not this thread's run
  unsigned long long running = start;
  for (int64_t i = a; i < b; ++i) {
    running += static_cast<unsigned long long>(
        sampling::weight(logit(x, s.stride, i), top_d, s.temperature));
    if (running > place) {
      s.out[0] = i;
      s.out[1] = static_cast<int64_t>(total);
      s.out[2] = -1;
      return;
    }
  }
}

template <typename T>
void launch(const SampleRow& s, int blocks, int64_t chunk, cudaStream_t stream) {
  launch_pdl_cluster(sample_row_kernel<T>, dim3(blocks), dim3(kThreads), dim3(blocks, 1, 1), stream,
                     s, chunk);
}

}  // namespace

void sample_row(const SampleRow& s, void* stream) {
  IP_CHECK(s.n >= 1 && s.n <= sampling::kMaxTokens, kUnsupported,
           "[cuda] sample_row takes rows of 1 to ", sampling::kMaxTokens, " tokens, got ", s.n);
  const int blocks =
      static_cast<int>(std::clamp<int64_t>((s.n + kMinChunk - 1) / kMinChunk, 1, kMaxCluster));
  const int64_t chunk = (s.n + blocks - 1) / blocks;
  const cudaStream_t st = as_stream(stream);
  if (!visit_float_storage(s.dtype, [&]<typename T>() { launch<T>(s, blocks, chunk, st); }))
    IP_FAIL(kUnsupported, "[cuda] sample_row takes float32, bfloat16 or float16, got ",
            dtype_name(s.dtype));
}

}  // namespace inplace::cuda
