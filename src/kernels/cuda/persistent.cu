// The persistent kernel of a recorded program (persistent.h): one cooperative launch whose
// blocks walk the tasks in order. Between two tasks a grid-wide barrier: one counter per
// program, counting up by one per block and task (release on arrival, acquire while waiting), so
// task t starts once every block has arrived t times; the last block to arrive after the last
// task sets it back to zero for the next launch. A block waits at the barrier inside its first
// virtual block of a task, where a product has already issued its first weight loads.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/cuda/attention_device.cuh"
#include "kernels/cuda/gemv_device.cuh"
#include "kernels/cuda/index_device.cuh"
#include "kernels/cuda/persistent.h"

namespace inplace::cuda {

namespace {

// Blocks per SM: two blocks of 8 warps, so the kernel may use 128 registers and no path spills
// (the decode attention alone takes 78; at three blocks, 80 registers, the GEMVs spill; four
// blocks at 64 registers made issue 11's step 0.471 ms against 0.373 ms with two).
constexpr int kBlocksPerSm = 2;

struct ProgramView {
  const TaskRef* tasks = nullptr;
  int32_t n = 0;
  const GemvBf16* gemv = nullptr;
  const AttentionTask* attention = nullptr;
  const MapTask* map = nullptr;
  uint32_t* barrier = nullptr;
};

// Arrival: the block's writes, then one release add by thread 0 (returns the count before it).
__device__ inline uint32_t arrive(uint32_t* c) {
  __syncthreads();
  uint32_t old = 0;
  if (threadIdx.x == 0)
    asm volatile("atom.add.release.gpu.global.u32 %0, [%1], 1;" : "=r"(old) : "l"(c) : "memory");
  return old;
}

// Thread 0 polls (relaxed) until the count reaches `target`, then one acquire fence; the block
// follows it through the barrier.
__device__ inline void wait_for(uint32_t* c, uint32_t target) {
  if (threadIdx.x == 0) {
    uint32_t v = 0;
    for (;;) {
      asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(c) : "memory");
      if (v >= target) break;
    }
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
  }
  __syncthreads();
}

// A row's split of the keys (attention_device.cuh); the row's last split to finish merges the
// partials (read past L1: other SMs wrote them) and writes the row.
template <int G, typename Wait>
__device__ void attention_task(const AttentionTask& t, int64_t vb, Wait&& wait) {
  wait();
  const Attention& a = t.a;
  const int64_t row = vb / t.splits;
  const int split = static_cast<int>(vb % t.splits);
  const int64_t S = decode::key_count(a);
  const int active = decode::active_splits(S, decode::kMinKeys, t.splits);
  if (split >= active) return;
  const int64_t per = (S + active - 1) / active;
  const int64_t j0 = split * per, j1 = min(S, j0 + per);
  const decode::BlockPartial p = decode::decode_block<G, decode::kDecodeWarps>(a, row, j0, j1);
  if (active == 1) {
    if (threadIdx.x < G) decode::store_row(a, row, p.o, p.l);
    return;
  }
  constexpr int kSlot = 4 + 4 * G;
  float* slots = t.part + row * t.splits * kSlot;
  if (threadIdx.x < G) {
    float* slot = slots + split * kSlot;
    reinterpret_cast<float4*>(slot + 4)[threadIdx.x] = p.o;
    if (threadIdx.x == 0) {
      slot[0] = p.m;
      slot[1] = p.l;
    }
  }
  __shared__ int last;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t old = 0;
    asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], 1;"
                 : "=r"(old)
                 : "l"(t.count + row)
                 : "memory");
    last = old == static_cast<uint32_t>(active - 1);
    if (last) atomicExch(t.count + row, 0u);
  }
  __syncthreads();
  if (!last || threadIdx.x >= G) return;
  decode::merge_and_store(a, row, active, [&](int sp) {
    const float* slot = slots + sp * kSlot;
    return decode::BlockPartial{__ldcg(slot), __ldcg(slot + 1),
                                __ldcg(reinterpret_cast<const float4*>(slot + 4) + threadIdx.x)};
  });
}

template <typename Wait>
__device__ void map_task(const MapTask& t, TaskKind kind, int64_t vb, Wait&& wait) {
  wait();
  const bool second = vb >= t.blocks_each;
  const IndexMap& m = second ? t.b : t.a;
  const int64_t n = second ? t.nb : t.na, block = second ? vb - t.blocks_each : vb;
  switch (kind) {
    case TaskKind::kIndexRead:
      indexed::read(m, n, block, t.blocks_each);
      break;
    case TaskKind::kIndexWrite:
      indexed::write(m, n, block, t.blocks_each);
      break;
    case TaskKind::kRowsWrite:
      indexed::write_rows_f32(m, n, block, t.blocks_each);
      break;
    default:
      break;
  }
}

template <typename Wait>
__device__ void gemv_task(const GemvBf16& g, int32_t variant, int64_t vb, Wait&& wait) {
  using gemv::gemv_block;
  switch (variant) {
    case 0:
      return gemv_block<GemvEpilogue::kNone, true, false, 1>(g, vb, wait);
    case 1:
      return gemv_block<GemvEpilogue::kNone, true, true, 1>(g, vb, wait);
    case 2:
      return gemv_block<GemvEpilogue::kResidual, true, false, 1>(g, vb, wait);
    case 3:
      return gemv_block<GemvEpilogue::kResidual, true, true, 1>(g, vb, wait);
    case 4:
      return gemv_block<GemvEpilogue::kSwiGLU, true, false, 1>(g, vb, wait);
    default:
      return gemv_block<GemvEpilogue::kSwiGLU, true, true, 1>(g, vb, wait);
  }
}

// The largest task argument (copied to shared memory per task).
constexpr size_t kTaskBytes = std::max({sizeof(GemvBf16), sizeof(AttentionTask), sizeof(MapTask)});

// Copies task `index` of `table` into shared memory, 8 bytes a thread (the task structs' alignment;
// the tables are constants: done before the barrier, so its latency overlaps the wait; read from
// shared memory after it, where the barrier's acquire does not send every field load to L2).
template <typename T>
__device__ inline const T& stage(const T* table, int32_t index, int4* smem) {
  static_assert(alignof(T) == 8 && sizeof(T) % 8 == 0, "task structs are copied in 8-byte words");
  constexpr int kWords = sizeof(T) / 8;
  const int2* src = reinterpret_cast<const int2*>(table + index);
  int2* dst = reinterpret_cast<int2*>(smem);
  for (int i = threadIdx.x; i < kWords; i += blockDim.x) dst[i] = src[i];
  __syncthreads();
  return *reinterpret_cast<const T*>(smem);
}

__global__ void __launch_bounds__(kTaskThreads, kBlocksPerSm) persistent_kernel(ProgramView p) {
  __shared__ int4 task[(kTaskBytes + 15) / 16];
  const uint32_t grid = gridDim.x;
  for (int32_t t = 0; t < p.n; ++t) {
    const TaskRef r = p.tasks[t];
    bool waited = t == 0;
    auto wait = [&] {
      if (!waited) wait_for(p.barrier, static_cast<uint32_t>(t) * grid);
      waited = true;
    };
    // Runs f on each of this block's virtual blocks of the task, with a block barrier between
    // them (shared memory is reused by the next one).
    auto each_block = [&](auto&& f) {
      for (int64_t vb = blockIdx.x; vb < r.blocks; vb += grid) {
        f(vb);
        __syncthreads();
      }
    };
    if (blockIdx.x < r.blocks) {
      switch (r.kind) {
        case TaskKind::kGemv: {
          const GemvBf16& g = stage(p.gemv, r.index, task);
          each_block([&](int64_t vb) { gemv_task(g, r.variant, vb, wait); });
          break;
        }
        case TaskKind::kAttention: {
          const AttentionTask& a = stage(p.attention, r.index, task);
          each_block([&](int64_t vb) {
            if (r.variant == 2)
              attention_task<4>(a, vb, wait);
            else if (r.variant == 3)
              attention_task<8>(a, vb, wait);
            else if (r.variant == 4)
              attention_task<16>(a, vb, wait);
            else
              attention_task<32>(a, vb, wait);
          });
          break;
        }
        default: {
          const MapTask& m = stage(p.map, r.index, task);
          each_block([&](int64_t vb) { map_task(m, r.kind, vb, wait); });
          break;
        }
      }
    }
    wait();  // a block without work in this task still passes its barrier
    const uint32_t old = arrive(p.barrier);
    if (t + 1 == p.n && threadIdx.x == 0 && old == static_cast<uint32_t>(p.n) * grid - 1)
      atomicExch(p.barrier, 0u);
  }
}

thread_local std::unique_ptr<Recording> t_recording;

size_t aligned(size_t n) {
  return (n + 255) / 256 * 256;
}

}  // namespace

Recording* recording() {
  return t_recording.get();
}

void begin_recording() {
  t_recording = std::make_unique<Recording>();
}

Recording end_recording() {
  Recording r = t_recording ? std::move(*t_recording) : Recording{};
  t_recording.reset();
  return r;
}

bool refuse_if_recording(const char* what) {
  if (!t_recording) return false;
  if (t_recording->refused.empty()) t_recording->refused = what;
  return true;
}

int persistent_grid() {
  static std::mutex mutex;
  static std::vector<int> grids;  // per device, 0 until asked
  int device = 0;
  IP_CUDA_CHECK(cudaGetDevice(&device), "the current device");
  std::lock_guard<std::mutex> lock(mutex);
  if (grids.size() <= static_cast<size_t>(device)) grids.resize(device + 1, 0);
  if (grids[device] == 0) {
    int sms = 0, occupancy = 0;
    IP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                  "the SM count");
    IP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occupancy, persistent_kernel,
                                                                kTaskThreads, 0),
                  "the persistent kernel's occupancy");
    grids[device] = sms * std::max(1, std::min(occupancy, kBlocksPerSm));
  }
  return grids[device];
}

struct Program {
  void* memory = nullptr;
  ProgramView view;
  int grid = 0;
};

Program* make_program(const Recording& r) {
  IP_CHECK(r.refused.empty(), kInternal, "[cuda] a refused recording made into a program");
  const size_t n_tasks = r.tasks.size() * sizeof(TaskRef),
               n_gemv = r.gemv.size() * sizeof(GemvBf16),
               n_att = r.attention.size() * sizeof(AttentionTask),
               n_map = r.map.size() * sizeof(MapTask);
  const size_t o_gemv = aligned(n_tasks), o_att = o_gemv + aligned(n_gemv),
               o_map = o_att + aligned(n_att), o_scratch = o_map + aligned(n_map),
               o_count = o_scratch + aligned(r.scratch_floats * sizeof(float)),
               total = o_count + aligned((r.counters + 1) * sizeof(uint32_t));
  auto program = std::make_unique<Program>();
  IP_CUDA_CHECK(cudaMalloc(&program->memory, total), "a persistent program's memory");
  char* base = static_cast<char*>(program->memory);
  std::vector<char> host(total, 0);
  std::memcpy(host.data(), r.tasks.data(), n_tasks);
  std::memcpy(host.data() + o_gemv, r.gemv.data(), n_gemv);
  std::memcpy(host.data() + o_map, r.map.data(), n_map);
  std::vector<AttentionTask> attention = r.attention;
  for (AttentionTask& t : attention) {
    t.part = reinterpret_cast<float*>(base + o_scratch) + t.part_at;
    t.count = reinterpret_cast<uint32_t*>(base + o_count) + t.count_at;
  }
  std::memcpy(host.data() + o_att, attention.data(), n_att);
  const cudaError_t e = cudaMemcpy(base, host.data(), total, cudaMemcpyHostToDevice);
  if (e != cudaSuccess) {
    cudaFree(program->memory);
    IP_CUDA_CHECK(e, "uploading a persistent program");
  }
  ProgramView& v = program->view;
  v.tasks = reinterpret_cast<const TaskRef*>(base);
  v.n = static_cast<int32_t>(r.tasks.size());
  v.gemv = reinterpret_cast<const GemvBf16*>(base + o_gemv);
  v.attention = reinterpret_cast<const AttentionTask*>(base + o_att);
  v.map = reinterpret_cast<const MapTask*>(base + o_map);
  v.barrier = reinterpret_cast<uint32_t*>(base + o_count) + r.counters;
  program->grid = persistent_grid();
  return program.release();
}

void launch_program(const Program* p, void* stream) {
  if (p->view.n == 0) return;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(p->grid));
  config.blockDim = dim3(kTaskThreads);
  config.stream = as_stream(stream);
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeCooperative;  // co-resident blocks (the barrier needs it)
  attribute[0].val.cooperative = 1;
  config.attrs = attribute;
  config.numAttrs = 1;
  IP_CUDA_CHECK(cudaLaunchKernelEx(&config, persistent_kernel, p->view),
                "launching the persistent kernel");
}

void destroy_program(Program* p) {
  if (!p) return;
  cudaFree(p->memory);
  delete p;
}

int64_t program_tasks(const Program* p) {
  return p ? p->view.n : 0;
}

}  // namespace inplace::cuda
