// The one-row half GEMV by task streams (gemv_half.cu picks it for products of more weight
// bytes): each warp streams whole weight rows of its tasks, the input row staged once a block in
// shared memory, no block barrier a column. Included by gemv_half.cu only.
#pragma once
#include "kernels/cuda/gate_act.cuh"
#include "kernels/cuda/gelu_new_device.cuh"
#include "kernels/cuda/gemv_half_device.cuh"
#include "kernels/cuda/layer_norm_device.cuh"

namespace inplace::cuda::half_gemv {

// 16-byte chunks of weight rows a lane has in flight per round, over the task's streams (and as
// many again for the next round, fetched before this one is summed).
constexpr int kRoundChunks = 8;

// The columns of task t of the one-row product: kC = 2 columns, a rotated pair (j, j + d/2) of
// one head for the tasks of the rotated prefix, two neighbours after it; kC = 1 (a gated MLP's
// two weights): column t. Past the last column: g.n. In 32-bit arithmetic (n < 2^31).
template <int kC>
__device__ inline void task_columns(const GemvHalf& g, uint32_t t, uint32_t rot_tasks,
                                    int64_t (&n)[kC]) {
  if constexpr (kC == 1) {
    n[0] = t;
  } else if (t < rot_tasks) {
    const uint32_t half = static_cast<uint32_t>(g.rot_d) / 2;
    n[0] = static_cast<int64_t>(t / half) * g.rot_d + t % half;
    n[1] = n[0] + half;
  } else {
    n[0] = g.rot_cols + 2 * static_cast<int64_t>(t - rot_tasks);
    n[1] = n[0] + 1;
  }
#pragma unroll
  for (int c = 0; c < kC; ++c)
    if (n[c] > g.n) n[c] = g.n;
}

// The decode step's product (one input row, the 16-byte path): a grid that stays resident. A
// task is kC columns (a rotated pair (j, j + d/2) of one head, two neighbours, or one column of a
// gated MLP's two weights) whose weight rows are streamed whole by g.split warps (its parts: the
// rows' 16-byte chunks dealt round-robin to their 32 * split lanes). A block takes groups of
// kWarps / split tasks in turn; each lane fetches kRoundChunks chunks a round over the task's
// rows, and the next round (the next group's first, at a task's end) before it sums this one.
// The first round is fetched before the wait for the previous kernel (the weights are
// constants); then the block stages the input row (normalised when kNorm) in shared memory, and
// each round reads its x chunks there (k at most kGemvHalfMaxNormK). A task's parts meet in shared
// memory in a fixed order, one block barrier a task (none with one part); a rotated pair meets in
// one lane.
template <typename T, GemvEpilogue kE, bool kNorm, bool kLayer = false>
__global__ void __launch_bounds__(32 * kWarps, 2) gemv_half_stream_kernel(GemvHalf g) {
  constexpr bool kTwo = kE == GemvEpilogue::kSwiGLU;
  constexpr int kC = kTwo ? 1 : 2;       // columns a task
  constexpr int kS = kTwo ? 2 : kC;      // weight rows a task streams
  constexpr int kU = kRoundChunks / kS;  // chunks of each a lane fetches a round
  static_assert(kS == 2, "launch_stream sizes rounds for two rows a task");
  __shared__ __align__(16) T xs[kGemvHalfMaxNormK];
  __shared__ float part_sums[2][kS][kWarps];  // by task parity: one barrier a task
  pdl_trigger();
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, split = g.split;
  const uint32_t K = static_cast<uint32_t>(g.k), per_block = kWarps / split;
  const uint32_t round_k = g.round_k, rounds = g.rounds, rot_tasks = g.rot_tasks;
  const uint32_t tasks = g.tasks, groups = g.groups;
  // This lane's first element of a round: chunk u of the round is 256 * split elements, a part's
  // 256 of them, its lanes 8 apart (so the parts' lanes read each chunk together).
  const uint32_t lane_k = ((warp % split) * 32 + lane) * 8, chunk_step = 256 * split;
  // A task's weight rows (null past the last column or task).
  auto rows_of = [&](uint32_t t, const T*(&p)[kS]) {
    int64_t n[kC];
    task_columns<kC>(g, t, rot_tasks, n);
#pragma unroll
    for (int c = 0; c < kC; ++c)
      p[c] = t < tasks && n[c] < g.n ? weight_row<T>(g.w, g.more, n[c], g.k) : nullptr;
    if constexpr (kTwo) p[1] = t < tasks ? static_cast<const T*>(g.w2) + n[0] * g.k : nullptr;
  };
  // Element offset of this lane's chunk u of round r.
  auto chunk_k = [&](uint32_t r, int u) { return r * round_k + lane_k + u * chunk_step; };
  auto fetch = [&](uint4(&buf)[kS][kU], const T* const(&p)[kS], uint32_t r) {
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const uint32_t k = chunk_k(r, u);
#pragma unroll
      for (int s = 0; s < kS; ++s)
        if (k < K && p[s]) buf[s][u] = __ldcs(reinterpret_cast<const uint4*>(p[s] + k));
    }
  };
  uint4 cur[kS][kU], nxt[kS][kU];
  const T* p[kS];
  uint32_t group = blockIdx.x, r = 0, parity = 0;
  uint32_t t = group * per_block + warp / split;
  if (group < groups) {
    rows_of(t, p);
    fetch(cur, p, 0);
  }
  if constexpr (kNorm) prefetch_norm<T, kLayer>(g);
  pdl_wait();
  // The row writes' places, read once where one position serves every head.
  gemv::RowPlaces place;
  if constexpr (kE == GemvEpilogue::kNone)
    place = gemv::row_places<32>(g.writes, g.n_writes, blockIdx.x == 0 && threadIdx.x < 32);
  stage_row<T, kNorm, kLayer>(g, xs);
  // What the task's epilogue reads that the product does not change, requested at its start.
  float acc[kS], bias[kC], residual[kC], cs[kC][2];
  T* target[kC][2];
  int64_t n[kC];
  while (group < groups) {
    const bool lead = warp % split == 0 && lane == 0;  // the task's epilogue
    if (r == 0) {
      task_columns<kC>(g, t, rot_tasks, n);
#pragma unroll
      for (int s = 0; s < kS; ++s) acc[s] = 0.f;
#pragma unroll
      for (int c = 0; c < kC; ++c) {
        bias[c] = residual[c] = 0.f, cs[c][0] = 1.f, cs[c][1] = 0.f;
        target[c][0] = target[c][1] = nullptr;
        if (!lead || t >= tasks || n[c] >= g.n) continue;
        if (const T* b = bias_at<T>(g.bias, g.more, n[c])) bias[c] = to_f(*b);
        if constexpr (kE == GemvEpilogue::kResidual)
          residual[c] = to_f(static_cast<const T*>(g.residual)[n[c]]);
        if constexpr (kE == GemvEpilogue::kNone) {
          if (t < rot_tasks) {
            const int64_t j = rotary_place(g, n[c]);
            cs[c][0] = to_f(static_cast<const T*>(g.cos)[j]);
            cs[c][1] = to_f(static_cast<const T*>(g.sin)[j]);
          }
          if (g.n_writes > 0) target[c][0] = gemv::row_target<T>(g.writes[0], n[c], place.first);
          if (g.n_writes > 1) target[c][1] = gemv::row_target<T>(g.writes[1], n[c], place.second);
        }
      }
    }
    // The next round, this task's or the next group's first, before this one is summed.
    uint32_t gn = group, tn = t, rn = r + 1;
    const T* pn[kS];
#pragma unroll
    for (int s = 0; s < kS; ++s) pn[s] = p[s];
    if (rn == rounds) {
      rn = 0;
      gn = group + gridDim.x;
      tn = gn * per_block + warp / split;
      if (gn < groups) rows_of(tn, pn);
    }
    if (gn < groups) fetch(nxt, pn, rn);
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const uint32_t k = chunk_k(r, u);
      if (k >= K) break;
      float xv[8], wv[8];
      widen<T>(*reinterpret_cast<const uint4*>(xs + k), xv);
#pragma unroll
      for (int s = 0; s < kS; ++s) {
        if (!p[s]) continue;
        widen<T>(cur[s][u], wv);
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[s] += xv[i] * wv[i];
      }
    }
    if (rn == 0) {  // the task's last round: its sums, then the epilogue in its lead lane
#pragma unroll
      for (int s = 0; s < kS; ++s)
        for (int o = 16; o > 0; o >>= 1) acc[s] += __shfl_xor_sync(0xffffffffu, acc[s], o);
      if (split > 1) {  // the parts' sums in order (every warp of the block is here)
        if (lane == 0)
#pragma unroll
          for (int s = 0; s < kS; ++s) part_sums[parity][s][warp] = acc[s];
        __syncthreads();
        if (lead)
#pragma unroll
          for (int s = 0; s < kS; ++s) {
            acc[s] = 0.f;
            for (int q = 0; q < split; ++q) acc[s] += part_sums[parity][s][warp + q];
          }
        parity ^= 1;
      }
      if (lead && t < tasks) {
        T v[kC];
#pragma unroll
        for (int c = 0; c < kC; ++c) {
          float a = kTwo ? acc[0] : acc[c];
          if (g.bias) a = a + bias[c];
          v[c] = from_f<T>(a);
          if constexpr (kE == GemvEpilogue::kResidual) v[c] = from_f<T>(residual[c] + to_f(v[c]));
          if constexpr (kTwo) {
            const T sg = from_f<T>(gate_act(g.activation, to_f(v[c])));
            v[c] = from_f<T>(to_f(sg) * to_f(from_f<T>(acc[1])));
          }
          if constexpr (kE == GemvEpilogue::kGeluNew)
            v[c] = from_f<T>(gelu_new<T>(g.gelu, to_f(v[c])));
        }
        if constexpr (kC == 2) {
          if (t < rot_tasks) {  // rotary_embedding at T: rotate_half(v) is (-v1, v0)
            const float v0 = to_f(v[0]), v1 = to_f(v[1]);
            const float a0 = to_f(from_f<T>(__fmul_rn(v0, cs[0][0])));
            const float b0 = to_f(from_f<T>(__fmul_rn(-v1, cs[0][1])));
            const float a1 = to_f(from_f<T>(__fmul_rn(v1, cs[1][0])));
            const float b1 = to_f(from_f<T>(__fmul_rn(v0, cs[1][1])));
            v[0] = from_f<T>(__fadd_rn(a0, b0));
            v[1] = from_f<T>(__fadd_rn(a1, b1));
          }
        }
#pragma unroll
        for (int c = 0; c < kC; ++c) {
          if (n[c] >= g.n) continue;
          static_cast<T*>(g.y)[n[c]] = v[c];
          if (target[c][0]) *target[c][0] = v[c];
          if (target[c][1]) *target[c][1] = v[c];
        }
      }
    }
#pragma unroll
    for (int s = 0; s < kS; ++s) {
      p[s] = pn[s];
#pragma unroll
      for (int u = 0; u < kU; ++u) cur[s][u] = nxt[s][u];
    }
    group = gn;
    t = tn;
    r = rn;
  }
}

}  // namespace inplace::cuda::half_gemv
