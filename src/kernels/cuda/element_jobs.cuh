// One element-wise job, or two independent jobs of one kind (a launch group's pair: the cos and
// the sin of a rotary table, two fused_pointwise programs), in one launch: each job a grid-stride
// loop calling kElement(job, e) for its elements e < n; a pair's grid is (blocks, 2), job
// blockIdx.y. The jobs travel in the kernel's parameters (a captured graph replays them as are).
#pragma once
#include <algorithm>

#include "kernels/cuda/device_common.cuh"

namespace inplace::cuda {

template <typename Job>
struct JobPair {
  Job job[2];
  int64_t n[2];
};

template <typename Job, void (*kElement)(const Job&, int64_t)>
__global__ void job_kernel(const __grid_constant__ Job job, int64_t n) {
  pdl_begin();
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x)
    kElement(job, e);
}

template <typename Job, void (*kElement)(const Job&, int64_t)>
__global__ void job_pair_kernel(const __grid_constant__ JobPair<Job> pair) {
  pdl_begin();
  const Job& job = pair.job[blockIdx.y];
  const int64_t n = pair.n[blockIdx.y];
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x)
    kElement(job, e);
}

// `job` over n elements (nothing when n is 0).
template <typename Job, void (*kElement)(const Job&, int64_t)>
void launch_job(const Job& job, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  launch_pdl(job_kernel<Job, kElement>, blocks_for(n), 256, s, job, n);
}

// a over na and b over nb elements in one launch (each alone when the other has none).
template <typename Job, void (*kElement)(const Job&, int64_t)>
void launch_job_pair(const Job& a, int64_t na, const Job& b, int64_t nb, cudaStream_t s) {
  static_assert(sizeof(JobPair<Job>) < 32000, "a kernel's parameters hold at most 32764 bytes");
  if (na == 0 || nb == 0) {
    launch_job<Job, kElement>(a, na, s);
    launch_job<Job, kElement>(b, nb, s);
    return;
  }
  JobPair<Job> pair;
  pair.job[0] = a;
  pair.job[1] = b;
  pair.n[0] = na;
  pair.n[1] = nb;
  launch_pdl(job_pair_kernel<Job, kElement>, dim3(std::max(blocks_for(na), blocks_for(nb)), 2), 256,
             s, pair);
}

}  // namespace inplace::cuda
